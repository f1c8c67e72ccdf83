{{/*
ovn-sync.alerts is the Prometheus rule file of ovn-sync's alerts (the spec of the PrometheusRule, and
deploy/prometheus/alerts.yaml). Grouped by namespace and job: every replica of one installation is
scraped under one job (the metrics Service), and only the leader passes, so "is anything wrong" is a
question about the group, not one process. Only the leader's gauges of the last pass count: a
replica that lost the Lease keeps the values of its last pass.
*/}}
{{- define "ovn-sync.alerts" -}}
{{- $resync := include "ovn-sync.seconds" .Values.resync | int -}}
groups:
- name: ovn-sync
  rules:
  - alert: OvnSyncAbsent
    expr: |-
      sum by (namespace, job) (up{job="{{ include "ovn-sync.fullname" . }}-metrics", namespace="{{ .Release.Namespace }}"}) == 0
      or absent(up{job="{{ include "ovn-sync.fullname" . }}-metrics", namespace="{{ .Release.Namespace }}"})
    for: 5m
    labels:
      severity: critical
    annotations:
      summary: no replica of ovn-sync is up
      description: >-
        No replica of {{`{{ $labels.job }}`}} in {{`{{ $labels.namespace }}`}} has answered a scrape for
        5 minutes: none runs, or none can be reached, so nothing keeps the NB equal to the cluster.
        kubectl -n {{ .Release.Namespace }} get pods says whether they run.
  - alert: OvnSyncPassesFailing
    expr: |-
      sum by (namespace, job) (increase(ovn_sync_passes_total{result="error"}[10m])) > 0
      unless on (namespace, job)
      sum by (namespace, job) (increase(ovn_sync_passes_total{result="success"}[10m])) > 0
    for: 5m
    labels:
      severity: critical
    annotations:
      summary: ovn-sync's passes fail
      description: >-
        Every pass of {{`{{ $labels.job }}`}} in {{`{{ $labels.namespace }}`}} for 10 minutes failed, so
        the NB no longer follows the cluster. The leader's log says why ("pass failed").
  - alert: OvnSyncNoSuccessfulPass
    expr: time() - max by (namespace, job) (ovn_sync_last_success_timestamp_seconds) > {{ mul 3 $resync }}
    for: 5m
    labels:
      severity: critical
    annotations:
      summary: ovn-sync has not passed for three resync periods
      description: >-
        No replica of {{`{{ $labels.job }}`}} in {{`{{ $labels.namespace }}`}} finished a pass for
        {{`{{ $value | humanizeDuration }}`}}, while a full pass runs at least every {{ .Values.resync }}
        (--resync). Check that one replica leads and that the NB answers.
{{- if not .Values.dryRun.enabled }}
  - alert: OvnSyncMassDeleteRefused
    expr: sum by (namespace, job) (increase(ovn_sync_passes_total{result="refused"}[5m])) > 0
    labels:
      severity: critical
    annotations:
      summary: ovn-sync refuses a mass delete
      description: >-
        A pass of {{`{{ $labels.job }}`}} in {{`{{ $labels.namespace }}`}} would delete more than
        --max-delete-fraction of the ports it owns; it is refused and retried, and nothing is written
        meanwhile. /readyz on the leader names the deletes. If they are meant, run once with
        --allow-mass-delete.
{{- end }}
  - alert: OvnSyncNBDisconnected
    expr: ovn_sync_nb_connected == 0
    for: 2m
    labels:
      severity: warning
    annotations:
      summary: ovn-sync is not connected to the NB
      description: >-
        {{`{{ $labels.instance }}`}} of {{`{{ $labels.job }}`}} in {{`{{ $labels.namespace }}`}} has not
        been connected to the NB for 2 minutes (it retries with backoff). A leader without the NB
        writes nothing; a standby without it cannot take over with a warm cache.
{{- if not .Values.dryRun.enabled }}
  - alert: OvnSyncNoLeader
    expr: max by (namespace, job) (ovn_sync_leader) == 0
    for: 2m
    labels:
      severity: critical
    annotations:
      summary: no ovn-sync replica leads
      description: >-
        No replica of {{`{{ $labels.job }}`}} in {{`{{ $labels.namespace }}`}} has held the Lease for
        2 minutes, so nothing writes to the NB. kubectl get lease names the holder; the replicas' logs
        say why they stand by.
{{- end }}
  - alert: OvnSyncIncrementalMismatch
    expr: sum by (namespace, job) (increase(ovn_sync_incremental_mismatches_total[1h])) > 0
    labels:
      severity: warning
    annotations:
      summary: an incremental pass differed from a full build
      description: >-
        {{`{{ $labels.job }}`}} in {{`{{ $labels.namespace }}`}} found an incremental desired state that
        differed from a full build of the same inputs. The full one was used, so the NB is right; it is
        a bug in ovn-sync: its log has the owner and the difference ("incremental desired state
        differs").
  - alert: OvnSyncProblemsPersist
    expr: |-
      max by (namespace, job, reason) (
        ovn_sync_problems * on (namespace, job, instance) group_left ovn_sync_leader
      ) > 0
    for: 1h
    labels:
      severity: warning
    annotations:
      summary: objects with problems for an hour
      description: >-
        {{`{{ $value }}`}} object(s) seen by {{`{{ $labels.job }}`}} in {{`{{ $labels.namespace }}`}}
        have had the problem {{`{{ $labels.reason }}`}} for an hour: their ports are not what they ask
        for. Warning Events name them: kubectl get events -A --field-selector
        reason={{`{{ $labels.reason }}`}}.
  - alert: OvnSyncAddressAtRisk
    expr: max by (namespace, job, reason) (ovn_sync_problems{reason=~"KubeOVN.*"}) > 0
    for: 10m
    labels:
      severity: warning
    annotations:
      summary: kube-ovn's rows put a VM's address at risk
      description: >-
        {{`{{ $value }}`}} VM(s) seen by {{`{{ $labels.job }}`}} in {{`{{ $labels.namespace }}`}} have had
        the problem {{`{{ $labels.reason }}`}} for 10 minutes: kube-ovn's ports or IP objects would let
        their addresses go or hold them twice. /plan on ovn-sync's metrics port names them and says
        what ovn-sync would write instead; Warning Events name them too where --events is on.
  - alert: OvnSyncSwitchNearlyFull
    expr: |-
      max by (namespace, job, switch) (
        ovn_sync_switch_ports
          * on (namespace, job, instance) group_left ovn_sync_leader
          / on (namespace, job, instance) group_left ovn_sync_switch_port_limit
      ) > 0.9
    for: 15m
    labels:
      severity: warning
    annotations:
      summary: a logical switch nears the most ports OVN binds
      description: >-
        Switch {{`{{ $labels.switch }}`}} holds {{`{{ $value | humanizePercentage }}`}} of the ports OVN
        binds on one switch (ovn_sync_switch_port_limit, 32767), counting ovn-sync's and kube-ovn's, as
        {{`{{ $labels.job }}`}} in {{`{{ $labels.namespace }}`}} counts them. Past the limit a new pod or
        VM on it gets no port (SwitchFull problems). Spread the network over more kube-ovn Subnets or
        NADs.
  - alert: OvnSyncSwitchFull
    expr: |-
      max by (namespace, job) (
        ovn_sync_problems{reason="SwitchFull"} * on (namespace, job, instance) group_left ovn_sync_leader
      ) > 0
    for: 5m
    labels:
      severity: critical
    annotations:
      summary: owners without a port, their switch full
      description: >-
        {{`{{ $value }}`}} object(s) seen by {{`{{ $labels.job }}`}} in {{`{{ $labels.namespace }}`}} have
        no port: their network's switch holds as many ports as OVN binds on one, so their pods and VMs
        have no network. Nothing is evicted; they get ports as others leave the switch. Warning Events
        name them: kubectl get events -A --field-selector reason=SwitchFull; ovn_sync_switch_ports
        names the full switch.
{{- end -}}

{{/* ovn-sync.fullname names the chart's objects: the release name, with the chart's name appended unless it holds it. */}}
{{- define "ovn-sync.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* ovn-sync.labels are on every object. */}}
{{- define "ovn-sync.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* ovn-sync.selector selects the standalone Deployment's pods. */}}
{{- define "ovn-sync.selector" -}}
app: {{ include "ovn-sync.fullname" . }}
{{- end -}}

{{/* ovn-sync.serviceAccount is the service account ovn-sync runs as: its own, or ovn-central's as a sidecar. */}}
{{- define "ovn-sync.serviceAccount" -}}
{{- if eq .Values.mode "sidecar" -}}{{ .Values.sidecar.serviceAccount }}{{- else -}}{{ include "ovn-sync.fullname" . }}{{- end -}}
{{- end -}}

{{/* ovn-sync.portName is the container port of /metrics: a port name is at most 15 characters, and in
ovn-central's pods it must not clash with another container's. */}}
{{- define "ovn-sync.portName" -}}
{{- if eq .Values.mode "sidecar" -}}ovnsync-metrics{{- else -}}metrics{{- end -}}
{{- end -}}

{{/* ovn-sync.check fails rendering on values that cannot work. */}}
{{- define "ovn-sync.check" -}}
{{- if not (has .Values.mode (list "standalone" "sidecar")) -}}
{{- fail (printf "mode is %q: standalone or sidecar" .Values.mode) -}}
{{- end -}}
{{- if and (eq .Values.mode "standalone") (not .Values.leaderElection.enabled) (not .Values.dryRun.enabled) (gt (int .Values.standalone.replicas) 1) -}}
{{- fail (printf "standalone.replicas is %d with leaderElection.enabled false: every replica would write" (int .Values.standalone.replicas)) -}}
{{- end -}}
{{- $_ := include "ovn-sync.seconds" .Values.resync -}}
{{- if and .Values.sidecar.patchOnly (ne .Values.mode "sidecar") -}}
{{- fail "sidecar.patchOnly needs mode sidecar" -}}
{{- end -}}
{{- if and (eq .Values.mode "standalone") (include "ovn-sync.ssl" .) (not .Values.nb.tlsSecret) -}}
{{- fail "nb.endpoints has ssl: endpoints: nb.tlsSecret must name the Secret with the client certificate" -}}
{{- end -}}
{{- end -}}

{{/* ovn-sync.ssl is "true" when an NB endpoint of standalone mode is ssl:, else empty. */}}
{{- define "ovn-sync.ssl" -}}
{{- range .Values.nb.endpoints -}}{{- if hasPrefix "ssl:" . -}}true{{- end -}}{{- end -}}
{{- end -}}

{{/* ovn-sync.seconds is a duration of hours, minutes and seconds (1h, 5m, 90s, 1h30m) in seconds. */}}
{{- define "ovn-sync.seconds" -}}
{{- $d := toString . -}}
{{- if or (eq $d "") (not (regexMatch "^([0-9]+h)?([0-9]+m)?([0-9]+s)?$" $d)) -}}
{{- fail (printf "duration %q: hours, minutes and seconds (e.g. 5m, 1h30m)" $d) -}}
{{- end -}}
{{- $s := 0 -}}
{{- range regexFindAll "[0-9]+[hms]" $d -1 -}}
{{- $unit := get (dict "h" 3600 "m" 60 "s" 1) (regexFind "[hms]$" .) -}}
{{- $s = add $s (mul (regexFind "^[0-9]+" . | int) $unit) -}}
{{- end -}}
{{- $s -}}
{{- end -}}

{{/* ovn-sync.bytes is a Kubernetes memory quantity (512Mi, 1Gi, 1.5G, 536870912) in bytes. */}}
{{- define "ovn-sync.bytes" -}}
{{- $q := toString . -}}
{{- if not (regexMatch "^[0-9]+(\\.[0-9]+)?([kMGT]|[KMGT]i)?$" $q) -}}
{{- fail (printf "memory quantity %q: a number with an optional suffix k, M, G, T, Ki, Mi, Gi or Ti" $q) -}}
{{- end -}}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" $q -}}
{{- $suffix := trimPrefix $num $q -}}
{{- $mult := get (dict "" 1 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776) $suffix -}}
{{- printf "%d" (mulf (float64 $num) $mult | floor | int64) -}}
{{- end -}}

{{/* ovn-sync.gomemlimit is GOMEMLIMIT in bytes: goMemLimitPercent of the memory limit; empty without one.
A plain byte count, which the Go runtime reads as bytes and go_gc_gomemlimit_bytes reports unchanged; the
container quotes it, as an env value must be a string. */}}
{{- define "ovn-sync.gomemlimit" -}}
{{- $limit := dig "limits" "memory" "" (.Values.resources | default dict) -}}
{{- $pct := int .Values.goMemLimitPercent -}}
{{- if and $limit (gt $pct 0) -}}
{{- if gt $pct 100 -}}
{{- fail (printf "goMemLimitPercent is %d: at most 100" $pct) -}}
{{- end -}}
{{- div (mul (include "ovn-sync.bytes" $limit | int64) $pct) 100 -}}
{{- end -}}
{{- end -}}

{{/* ovn-sync.container is the ovn-sync container, in the standalone Deployment or in ovn-central's pods. */}}
{{- define "ovn-sync.container" -}}
{{- $sidecar := eq .Values.mode "sidecar" -}}
- name: ovn-sync
  image: {{ printf "%s:%s" .Values.image.repository (toString .Values.image.tag) | quote }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  args:
  - run
  {{- if $sidecar }}
  - --nb={{ .Values.sidecar.nb }}
  {{- else }}
  - --nb={{ join "," .Values.nb.endpoints }}
  {{- if include "ovn-sync.ssl" . }}
  - --nb-cert=/etc/ovn-sync-tls/tls.crt
  - --nb-key=/etc/ovn-sync-tls/tls.key
  - --nb-ca=/etc/ovn-sync-tls/ca.crt
  {{- end }}
  {{- end }}
  - --config=/etc/ovn-sync/config.yaml
  - --resync={{ .Values.resync }}
  {{- if .Values.dryRun.enabled }}
  - --dry-run
  {{- if .Values.dryRun.events }}
  - --events
  {{- end }}
  {{- else }}
  - --leader-elect={{ .Values.leaderElection.enabled }}
  {{- end }}
  {{- if and .Values.leaderElection.enabled (not .Values.dryRun.enabled) }}
  - --lease-namespace={{ .Release.Namespace }}
  - --lease-name={{ .Values.leaderElection.leaseName }}
  - --lease-duration={{ .Values.leaderElection.leaseDuration }}
  - --renew-deadline={{ .Values.leaderElection.renewDeadline }}
  - --retry-period={{ .Values.leaderElection.retryPeriod }}
  {{- end }}
  - --metrics-addr=:{{ .Values.metricsPort }}
  {{- range .Values.extraArgs }}
  - {{ . | quote }}
  {{- end }}
  env:
  - name: POD_NAMESPACE
    valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
  {{- with include "ovn-sync.gomemlimit" . }}
  # The Go runtime's soft memory limit: {{ $.Values.goMemLimitPercent }}% of the container's memory limit, so
  # the collector works harder before the container nears it.
  - name: GOMEMLIMIT
    value: {{ . | quote }}
  {{- end }}
  {{- with get .Values "goGC" }}
  # The collector's heap growth between cycles, in percent of the live heap (the runtime's default is 100).
  - name: GOGC
    value: {{ . | quote }}
  {{- end }}
  ports:
  - {name: {{ include "ovn-sync.portName" . }}, containerPort: {{ .Values.metricsPort }}}
  {{- if not $sidecar }}
  # Ready once every informer and the NB cache are synced and, on the leader, the last pass
  # succeeded. Not in sidecar mode: there it would take ovn-central's pod, and the NB and SB
  # Services behind it, out of service whenever a pass fails.
  readinessProbe:
    httpGet: {path: /readyz, port: {{ .Values.metricsPort }}}
    periodSeconds: 5
  {{- end }}
  livenessProbe:
    httpGet: {path: /healthz, port: {{ .Values.metricsPort }}}
    periodSeconds: 10
    failureThreshold: 6
  {{- with .Values.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with ternary .Values.sidecar.securityContext .Values.standalone.securityContext $sidecar }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  volumeMounts:
  {{- if $sidecar }}
  - {name: host-run-ovn, mountPath: /var/run/ovn}
  - {name: ovn-sync-config, mountPath: /etc/ovn-sync, readOnly: true}
  {{- else }}
  - {name: config, mountPath: /etc/ovn-sync, readOnly: true}
  {{- if include "ovn-sync.ssl" . }}
  - {name: nb-tls, mountPath: /etc/ovn-sync-tls, readOnly: true}
  {{- end }}
  {{- end }}
{{- end -}}

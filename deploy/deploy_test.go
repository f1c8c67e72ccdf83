package deploy

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/ovn-sync/ovn-sync/sources"
)

// grant is one permission: a verb on a resource of an API group, in a
// ClusterRole (cluster-wide) or a Role (namespaced: scope is its namespace).
type grant struct {
	scope, group, resource, verb string
}

func (g grant) String() string {
	group := g.group
	if group == "" {
		group = "core"
	}
	return fmt.Sprintf("%s %s/%s in %s", g.verb, group, g.resource, g.scope)
}

const cluster = "cluster"

// needed is every permission run mode uses, and nothing more:
//   - sources: the informers list and watch every kind of its table
//     (sources.KindResources; Pods, Namespaces and StatefulSets through the
//     typed client, the others through the dynamic one) and the CRD of each
//     custom kind not installed yet; IPAMClaims are also got by name
//     (publish); nothing else gets one object (discovery needs no RBAC rule);
//   - publish: a merge patch on Pods and on VirtualMachines publishes
//     addresses, an update of ipamclaims/status fills a claim;
//   - publish's Events: client-go's recorder creates Events and patches one
//     it already created when a problem recurs;
//   - cmd/ovn-sync/run.go: leader election's Lease lock gets, creates and
//     updates one Lease, in the namespace ovn-sync runs in only.
func needed() map[grant]bool {
	m := map[grant]bool{}
	add := func(scope, group string, resources, verbs []string) {
		for _, r := range resources {
			for _, v := range verbs {
				m[grant{scope, group, r, v}] = true
			}
		}
	}
	for _, r := range sources.KindResources() {
		add(cluster, r.Group, []string{r.Resource}, []string{"list", "watch"})
	}
	add(cluster, "", []string{"pods"}, []string{"patch"})
	add(cluster, "kubevirt.io", []string{"virtualmachines"}, []string{"patch"})
	add(cluster, "k8s.cni.cncf.io", []string{"ipamclaims"}, []string{"get"})
	add(cluster, "k8s.cni.cncf.io", []string{"ipamclaims/status"}, []string{"update"})
	add(cluster, "apiextensions.k8s.io", []string{"customresourcedefinitions"}, []string{"list", "watch"})
	add(cluster, "", []string{"events"}, []string{"create", "patch"})
	add("kube-system", "coordination.k8s.io", []string{"leases"}, []string{"get", "create", "update"})
	return m
}

// neededDryRun is what a dry run uses: it reads what run mode reads, and
// writes nothing (with events, it creates Events).
func neededDryRun(events bool) map[grant]bool {
	m := map[grant]bool{}
	for _, r := range sources.KindResources() {
		m[grant{cluster, r.Group, r.Resource, "list"}] = true
		m[grant{cluster, r.Group, r.Resource, "watch"}] = true
	}
	m[grant{cluster, "apiextensions.k8s.io", "customresourcedefinitions", "list"}] = true
	m[grant{cluster, "apiextensions.k8s.io", "customresourcedefinitions", "watch"}] = true
	if events {
		m[grant{cluster, "", "events", "create"}] = true
		m[grant{cluster, "", "events", "patch"}] = true
	}
	return m
}

// serviceAccount is the only subject any binding of rbac.yaml may name;
// ovnCentralAccount that of sidecar-rbac.yaml (the sidecar runs as
// ovn-central's pods do).
var (
	serviceAccount    = rbacv1.Subject{Kind: "ServiceAccount", Name: "ovn-sync", Namespace: "kube-system"}
	ovnCentralAccount = rbacv1.Subject{Kind: "ServiceAccount", Name: "ovn-ovs", Namespace: "kube-system"}
)

// roleDoc is a ClusterRole or a Role: they have the same fields.
type roleDoc struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Rules             []rbacv1.PolicyRule     `json:"rules"`
	AggregationRule   *rbacv1.AggregationRule `json:"aggregationRule,omitempty"`
}

// manifest is what check reads from a multi-document RBAC file.
type manifest struct {
	grants   map[grant]bool
	problems []string
}

// parse reads every document of an RBAC manifest: roles become grants,
// bindings and anything that widens access become problems. Bindings may
// name subject alone.
func parse(data string, subject rbacv1.Subject) manifest {
	out := manifest{grants: map[grant]bool{}}
	bad := func(format string, args ...any) { out.problems = append(out.problems, fmt.Sprintf(format, args...)) }
	roles := map[string]bool{} // "ClusterRole/name", "Role/ns/name"
	type binding struct {
		what, ref string
		subjects  []rbacv1.Subject
	}
	var bindings []binding
	for i, doc := range strings.Split(data, "\n---") {
		var head struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name, Namespace string
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			bad("document %d: %v", i, err)
			continue
		}
		name := fmt.Sprintf("%s %s/%s", head.Kind, head.Metadata.Namespace, head.Metadata.Name)
		switch head.Kind {
		case "", "ServiceAccount":
		case "ClusterRole", "Role":
			var r roleDoc
			if err := yaml.UnmarshalStrict([]byte(doc), &r); err != nil {
				bad("%s: %v", name, err)
				continue
			}
			if r.AggregationRule != nil {
				bad("%s: an aggregationRule grants whatever other roles grant", name)
			}
			scope := cluster
			if head.Kind == "Role" {
				scope = head.Metadata.Namespace
				roles["Role/"+scope+"/"+head.Metadata.Name] = true
			} else {
				roles["ClusterRole/"+head.Metadata.Name] = true
			}
			for j, rule := range r.Rules {
				if len(rule.NonResourceURLs) > 0 {
					bad("%s rule %d: nonResourceURLs %v", name, j, rule.NonResourceURLs)
				}
				if len(rule.ResourceNames) > 0 && slices.Contains(rule.ResourceNames, "*") {
					bad("%s rule %d: wildcard in resourceNames", name, j)
				}
				for _, field := range [][]string{rule.APIGroups, rule.Resources, rule.Verbs} {
					for _, v := range field {
						if strings.Contains(v, "*") {
							bad("%s rule %d: wildcard %q in %v", name, j, v, field)
						}
					}
				}
				for _, g := range rule.APIGroups {
					for _, res := range rule.Resources {
						for _, v := range rule.Verbs {
							out.grants[grant{scope, g, res, v}] = true
						}
					}
				}
			}
		case "ClusterRoleBinding", "RoleBinding":
			var b rbacv1.RoleBinding // a ClusterRoleBinding has the same fields
			if err := yaml.UnmarshalStrict([]byte(doc), &b); err != nil {
				bad("%s: %v", name, err)
				continue
			}
			ref := "ClusterRole/" + b.RoleRef.Name
			if b.RoleRef.Kind == "Role" {
				ref = "Role/" + head.Metadata.Namespace + "/" + b.RoleRef.Name
			} else if head.Kind == "RoleBinding" {
				// A RoleBinding to a ClusterRole would grant its rules in
				// the binding's namespace only; nothing here does that.
				bad("%s binds ClusterRole %s", name, b.RoleRef.Name)
			}
			bindings = append(bindings, binding{name, ref, b.Subjects})
		default:
			bad("%s: unexpected kind in an RBAC manifest", name)
		}
	}
	for _, b := range bindings {
		if !roles[b.ref] {
			bad("%s refers to %s, which the file does not define", b.what, b.ref)
		}
		if len(b.subjects) != 1 || b.subjects[0] != subject {
			bad("%s: subjects %+v, want only %+v", b.what, b.subjects, subject)
		}
	}
	return out
}

// check returns every way m differs from least privilege: problems,
// grants beyond need, and needed grants missing.
func check(m manifest, need map[grant]bool) []string {
	out := slices.Clone(m.problems)
	for g := range m.grants {
		if !need[g] {
			out = append(out, "grants "+g.String()+", which ovn-sync does not use")
		}
	}
	for g := range need {
		if !m.grants[g] {
			out = append(out, "does not grant "+g.String()+", which ovn-sync uses")
		}
	}
	sort.Strings(out)
	return out
}

func TestRBACLeastPrivilege(t *testing.T) {
	for file, subject := range map[string]rbacv1.Subject{"rbac.yaml": serviceAccount, "sidecar-rbac.yaml": ovnCentralAccount} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range check(parse(string(data), subject), needed()) {
			t.Errorf("%s: %s", file, p)
		}
	}
}

// TestRBACDryRun: the chart's dry run reads only: list and watch of what
// run mode reads, Events only when asked for, no Lease.
func TestRBACDryRun(t *testing.T) {
	for _, events := range []bool{false, true} {
		files, err := Render(ChartDir, Release, map[string]any{"dryRun": map[string]any{"enabled": true, "events": events}})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range check(parse(files["rbac.yaml"], serviceAccount), neededDryRun(events)) {
			t.Errorf("dry run (events %v): %s", events, p)
		}
		dep := files["deployment.yaml"]
		if !strings.Contains(dep, "- --dry-run") || strings.Contains(dep, "--leader-elect") || strings.Contains(dep, "- --events") != events {
			t.Errorf("dry run (events %v): the Deployment's args are not a dry run's:\n%s", events, dep)
		}
	}
}

// TestRBACCheck makes sure check catches what it is for, on variants of a
// minimal manifest.
func TestRBACCheck(t *testing.T) {
	const sa = `apiVersion: v1
kind: ServiceAccount
metadata: {name: ovn-sync, namespace: kube-system}
`
	role := func(rules string) string {
		return sa + `---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: r}
rules:
` + rules + `---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: r}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: r}
subjects: [{kind: ServiceAccount, name: ovn-sync, namespace: kube-system}]
`
	}
	need := map[grant]bool{{cluster, "", "pods", "list"}: true, {cluster, "", "pods", "watch"}: true}
	for _, tc := range []struct {
		name, manifest string
		want           string // a substring of the first problem; "" for none
	}{
		{"exact", role("- {apiGroups: [''], resources: [pods], verbs: [list, watch]}\n"), ""},
		{"verb wildcard", role("- {apiGroups: [''], resources: [pods], verbs: ['*']}\n"), `wildcard "*"`},
		{"resource wildcard", role("- {apiGroups: [''], resources: ['*'], verbs: [list, watch]}\n"), `wildcard "*"`},
		{"subresource wildcard", role("- {apiGroups: [''], resources: [pods, 'pods/*'], verbs: [list, watch]}\n"), `wildcard "pods/*"`},
		{"group wildcard", role("- {apiGroups: ['*'], resources: [pods], verbs: [list, watch]}\n"), `wildcard "*"`},
		{"resourceNames wildcard", role("- {apiGroups: [''], resources: [pods], resourceNames: ['*'], verbs: [list, watch]}\n"), "resourceNames"},
		{"extra verb", role("- {apiGroups: [''], resources: [pods], verbs: [get, list, watch]}\n"), "grants get core/pods in cluster"},
		{"extra resource", role("- {apiGroups: [''], resources: [pods, secrets], verbs: [list, watch]}\n"), "grants list core/secrets"},
		{"missing verb", role("- {apiGroups: [''], resources: [pods], verbs: [list]}\n"), "does not grant watch core/pods"},
		{"non-resource URL", role("- {apiGroups: [''], resources: [pods], verbs: [list, watch]}\n- {nonResourceURLs: [/metrics], verbs: [get]}\n"), "nonResourceURLs"},
		{"other subject", strings.Replace(role("- {apiGroups: [''], resources: [pods], verbs: [list, watch]}\n"), "name: ovn-sync, namespace: kube-system}]", "name: default, namespace: kube-system}]", 1), "subjects"},
		{"unknown field", role("- {apiGroups: [''], resources: [pods], verbs: [list, watch], verb: [delete]}\n"), "unknown field"},
	} {
		got := check(parse(tc.manifest, serviceAccount), need)
		switch {
		case tc.want == "" && len(got) > 0:
			t.Errorf("%s: check = %q, want no problem", tc.name, got)
		case tc.want != "" && (len(got) == 0 || !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, tc.want) })):
			t.Errorf("%s: check = %q, want a problem containing %q", tc.name, got, tc.want)
		}
	}
}

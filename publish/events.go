package publish

import (
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/sources"
)

// Events turns Problems into Kubernetes Events on the objects they
// name, once per distinct problem: a problem that stays from pass to pass is
// reported when it first appears, and again only after it went away and
// came back.
type Events struct {
	log      logr.Logger
	recorder record.EventRecorder
	onEmit   func(reason string)
	// seen holds the problems of the previous pass.
	seen map[desired.Problem]bool
}

// NewEvents starts an event broadcaster writing to the API server (a
// goroutine client-go runs until stop is called); onEmit, when set, sees
// the reason of each Event emitted.
func NewEvents(kube kubernetes.Interface, log logr.Logger, onEmit func(string)) (*Events, func()) {
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	rec := b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "ovn-sync"})
	return &Events{log: log, recorder: rec, onEmit: onEmit, seen: map[desired.Problem]bool{}}, b.Shutdown
}

// objectRefs indexes the inputs' objects for event references (the UID ties
// an Event to one incarnation of an object).
type objectRefs map[string]*corev1.ObjectReference

func refKey(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

// indexRefs indexes the objects of in whose refKey named holds: the
// objects new problems are about, few of the many in holds.
func indexRefs(in desired.Inputs, named map[string]bool) objectRefs {
	refs := objectRefs{}
	sources.EachObject(in, func(k sources.Kind, apiVersion string, m metav1.Object) {
		if key := refKey(string(k), m.GetNamespace(), m.GetName()); named[key] {
			refs[key] = &corev1.ObjectReference{
				Kind: string(k), APIVersion: apiVersion, Namespace: m.GetNamespace(), Name: m.GetName(),
				UID: m.GetUID(), ResourceVersion: m.GetResourceVersion(),
			}
		}
	})
	return refs
}

// Report emits events for the problems not reported by the previous pass.
// Problems on objects that are not in the inputs (the config) are only logged.
func (e *Events) Report(problems []desired.Problem, in desired.Inputs) {
	now := make(map[desired.Problem]bool, len(problems))
	var fresh []desired.Problem
	named := map[string]bool{}
	for _, p := range problems {
		now[p] = true
		if !e.seen[p] {
			fresh = append(fresh, p)
			named[refKey(p.Kind, p.Namespace, p.Name)] = true
		}
	}
	var refs objectRefs
	if len(fresh) > 0 {
		refs = indexRefs(in, named)
	}
	for _, p := range fresh {
		e.log.Info("problem", "kind", p.Kind, "namespace", p.Namespace, "name", p.Name, "reason", p.Reason, "message", p.Message)
		ref, ok := refs[refKey(p.Kind, p.Namespace, p.Name)]
		if !ok {
			continue
		}
		e.recorder.Event(ref, corev1.EventTypeWarning, p.Reason, p.Message)
		if e.onEmit != nil {
			e.onEmit(p.Reason)
		}
	}
	e.seen = now
}

// Package publish writes what a pass decided back to the Kubernetes API:
// each owner's addresses as annotations on its pods and VirtualMachine
// (Publisher, from reconcile.Publications), and Problems as Events on the
// objects they name (Events). Both are run mode's; plan and apply write
// nothing to Kubernetes.
package publish

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/reconcile"
	"github.com/ovn-sync/ovn-sync/sources"
)

// Publisher patches pods and VirtualMachines with the annotations
// reconcile.Publications computes. It remembers what it patched per object
// so that a pass running before the informer has seen its own patch does
// not send it again: a patch is skipped while the object the informer
// holds is still the version the same patch was computed from. Once the
// informer has a newer version (ours or anyone's), the annotations it
// shows decide.
type Publisher struct {
	kube     kubernetes.Interface
	dyn      dynamic.Interface
	log      logr.Logger
	workers  int
	onResult func(result string)
	mu       sync.Mutex
	sent     map[types.UID]sentPatch
	// retry holds the patches that failed, sent again by the next Publish
	// unless it has a newer one for the object: an incremental pass
	// publishes for the owners it rebuilt only.
	retry map[types.UID]reconcile.Publication
}

type sentPatch struct {
	from string // the pod's resourceVersion the patch was computed from
	set  map[string]string
}

// NewPublisher returns a publisher patching through kube (pods) and dyn
// (VirtualMachines); onResult, when set, sees each patch's result
// (patched, gone, error).
func NewPublisher(kube kubernetes.Interface, dyn dynamic.Interface, log logr.Logger, onResult func(string)) *Publisher {
	return &Publisher{kube: kube, dyn: dyn, log: log, workers: 8, onResult: onResult, sent: map[types.UID]sentPatch{},
		retry: map[types.UID]reconcile.Publication{}}
}

// Publish sends patches, at most p.workers at a time; live, when not nil,
// holds the UIDs of every object that exists, and what was sent to the
// others is forgotten (an incremental pass passes nil: listing every
// object would cost what the pass saved). An object that is gone is not an
// error; other failures are logged and retried by the next pass.
func (p *Publisher) Publish(ctx context.Context, patches []reconcile.Publication, live map[types.UID]bool) {
	p.mu.Lock()
	if live != nil {
		for uid := range p.sent {
			if !live[uid] {
				delete(p.sent, uid)
			}
		}
	}
	if len(p.retry) > 0 {
		newer := make(map[types.UID]bool, len(patches))
		for _, pp := range patches {
			newer[pp.UID] = true
		}
		patches = slices.Clone(patches)
		for uid, pp := range p.retry {
			if !newer[uid] && (live == nil || live[uid]) {
				patches = append(patches, pp)
			}
		}
		clear(p.retry)
	}
	todo := patches[:0:0]
	for _, pp := range patches {
		if sent, ok := p.sent[pp.UID]; ok && sent.from == pp.ResourceVersion && subset(pp.Set, sent.set) {
			continue
		}
		todo = append(todo, pp)
	}
	p.mu.Unlock()
	if len(todo) == 0 {
		return
	}
	work := make(chan reconcile.Publication)
	var wg sync.WaitGroup
	for range min(p.workers, len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pp := range work {
				p.patch(ctx, pp)
			}
		}()
	}
	for _, pp := range todo {
		select {
		case work <- pp:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
}

func (p *Publisher) patch(ctx context.Context, pp reconcile.Publication) {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": pp.Set,
		// The UID precondition keeps a patch meant for one object off a new
		// object of the same name.
		"uid": pp.UID,
	}})
	if err != nil {
		return
	}
	opts := metav1.PatchOptions{FieldManager: "ovn-sync"}
	switch pp.Kind {
	case reconcile.KindVirtualMachine:
		_, err = p.dyn.Resource(sources.GVRVirtualMachine).Namespace(pp.Namespace).Patch(ctx, pp.Name, types.MergePatchType, body, opts)
	default:
		_, err = p.kube.CoreV1().Pods(pp.Namespace).Patch(ctx, pp.Name, types.MergePatchType, body, opts)
	}
	switch {
	case err == nil:
		p.mu.Lock()
		p.sent[pp.UID] = sentPatch{from: pp.ResourceVersion, set: pp.Set}
		p.mu.Unlock()
		p.result("patched")
		p.log.V(1).Info("published addresses", "kind", pp.Kind, "object", pp.Namespace+"/"+pp.Name, "annotations", pp.Set)
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsInvalid(err):
		// Gone, or replaced by a pod of the same name (the UID differs):
		// the next pass publishes for the new pod.
		p.result("gone")
	case ctx.Err() != nil:
	default:
		p.mu.Lock()
		p.retry[pp.UID] = pp
		p.mu.Unlock()
		p.result("error")
		p.log.Error(err, "publishing addresses failed; the next pass retries", "kind", pp.Kind, "object", pp.Namespace+"/"+pp.Name)
	}
}

func (p *Publisher) result(r string) {
	if p.onResult != nil {
		p.onResult(r)
	}
}

func subset(a, b map[string]string) bool {
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Live returns the UIDs of every pod and VirtualMachine in, for Publish.
func Live(in desired.Inputs) map[types.UID]bool {
	live := make(map[types.UID]bool, len(in.Pods)+len(in.VirtualMachines))
	for _, p := range in.Pods {
		live[p.UID] = true
	}
	for _, vm := range in.VirtualMachines {
		live[vm.UID] = true
	}
	return live
}

// Package publish writes what a pass decided back to the Kubernetes API:
// each owner's addresses as annotations on its pods and VirtualMachine
// (Publisher, from reconcile.Publications), and Problems as Events on the
// objects they name (Events). Both are run mode's; plan and apply write
// nothing to Kubernetes.
package publish

import (
	"context"
	"encoding/json"
	"hash/maphash"
	"maps"
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
// reconcile.Publications computes, and writes IPAMClaims' statuses. A pass
// hands it what it decided (Pass) and goes on: the writes wait in a queue,
// at most one per object (a newer pass's replaces an older one's), sent by
// at most 8 goroutines (workers), the newest pass's first. A first start on a
// cluster whose pods carry no annotations queues one patch a pod, which
// the API's rate limit spreads over minutes; a pod created meanwhile is
// annotated before them, and no pass waits for them.
//
// It remembers what it patched per object so that a pass running before
// the informer has seen its own patch does not send it again: a patch is
// skipped while the object the informer holds is still the version the
// same patch was computed from. Once the informer has a newer version
// (ours or anyone's), the annotations it shows decide, and a full pass
// forgets what was sent.
type Publisher struct {
	// MaxQueued bounds the writes that wait (0: no bound). Past it, those
	// that would go last are let go ("deferred"): a full pass decides them
	// again. A first start on pods without annotations decides one a pod,
	// and the API's rate limit sends --kube-api-qps a second; writes that
	// wait longer than the next full pass are held for nothing. Set it
	// before the first Publish.
	MaxQueued int

	kube    kubernetes.Interface
	dyn     dynamic.Interface
	log     logr.Logger
	workers int
	metrics PublisherMetrics

	mu   sync.Mutex
	sent map[types.UID]sentPatch
	// sentMost is the most entries sent held since it was made: a map
	// keeps the room it grew to, and forget makes it anew once it holds
	// a quarter of that.
	sentMost int
	// queue holds what is still to be written, one job per object;
	// passes orders it, the newest pass last.
	queue  map[types.UID]job
	passes [][]types.UID
	queued int // the UIDs in passes
	// retry holds the jobs that failed, queued again by the next Pass
	// unless it has a newer one for the object: an incremental pass
	// publishes for the owners it rebuilt only.
	retry map[types.UID]job
	// running counts the workers; idle waits for them (tests).
	running int
	idle    sync.WaitGroup
}

// PublisherMetrics counts what a Publisher does: each write by result
// (patched, gone, error, deferred), and how many wait in its queue.
type PublisherMetrics interface {
	Publication(result string)
	PublicationsQueued(n int)
}

// sentPatch is what was sent to an object: the version the patch was
// computed from and a fingerprint of its annotations, not the annotations
// themselves: a first start on a cluster whose pods carry none patches
// every pod, and what is remembered of each stays until a full pass.
type sentPatch struct {
	from string // the object's resourceVersion the patch was computed from
	sum  uint64 // setSum of the annotations
}

// job is one write: an object's annotations, or an IPAMClaim's status.
type job struct {
	patch *reconcile.Publication
	claim *reconcile.ClaimStatus
}

// NewPublisher returns a publisher patching through kube (pods) and dyn
// (VirtualMachines, IPAMClaims); m, when not nil, counts what it does.
func NewPublisher(kube kubernetes.Interface, dyn dynamic.Interface, log logr.Logger, m PublisherMetrics) *Publisher {
	return &Publisher{kube: kube, dyn: dyn, log: log, workers: 8, metrics: m, sent: map[types.UID]sentPatch{},
		queue: map[types.UID]job{}, retry: map[types.UID]job{}}
}

// Pass queues what a pass decided: out.Publications and out.Claims, which
// a pass computes with reconcile.Options.Publications set. After a full pass (which read
// every object) what was sent to objects that are gone or have changed
// since is forgotten, and so are the queued writes of objects that are
// gone; an incremental pass forgets nothing (listing every object would
// cost what the pass saved). The writes run under ctx.
func (p *Publisher) Pass(ctx context.Context, out reconcile.Outcome, snap sources.Snapshot) {
	var live map[types.UID]string
	if !out.Incremental {
		live = Live(snap.Inputs)
	}
	p.Publish(ctx, out.Publications, out.Claims, live)
}

// Publish queues patches and claim statuses as one pass (see Pass); live,
// when not nil, holds every object that exists, by UID, with the
// resourceVersion the pass read. An object that is gone is not an error;
// other failures are logged and retried after the next Publish.
func (p *Publisher) Publish(ctx context.Context, patches []reconcile.Publication, claims []reconcile.ClaimStatus, live map[types.UID]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if live != nil {
		p.forget(live)
	}
	var uids []types.UID
	for i := range patches {
		if sent, ok := p.sent[patches[i].UID]; ok && sent.from == patches[i].ResourceVersion && sent.sum == setSum(patches[i].Set) {
			continue
		}
		// A copy: a job pointing into patches would keep every patch of
		// the pass, those let go past MaxQueued included.
		pp := patches[i]
		p.queue[pp.UID] = job{patch: &pp}
		uids = append(uids, pp.UID)
	}
	for i := range claims {
		uid := claims[i].Claim.UID
		p.queue[uid] = job{claim: &claims[i]}
		uids = append(uids, uid)
	}
	for uid, j := range p.retry {
		if _, newer := p.queue[uid]; newer {
			continue
		}
		if _, ok := live[uid]; ok || live == nil {
			p.queue[uid] = j
			uids = append(uids, uid)
		}
	}
	clear(p.retry)
	if len(uids) > 0 {
		p.passes = append(p.passes, uids)
		p.queued += len(uids)
		p.compact()
		p.deferPast()
	}
	p.countQueued()
	for p.running < min(p.workers, len(p.queue)) {
		p.running++
		p.idle.Add(1)
		go p.work(ctx)
	}
}

// forget drops what was sent to objects that are gone or whose informer
// version moved on, and the queued writes of objects that are gone.
func (p *Publisher) forget(live map[types.UID]string) {
	for uid, sent := range p.sent {
		if rv, ok := live[uid]; !ok || rv != sent.from {
			delete(p.sent, uid)
		}
	}
	for uid := range p.queue {
		if _, ok := live[uid]; !ok {
			delete(p.queue, uid)
		}
	}
	if p.sentMost > 1024 && len(p.sent) < p.sentMost/4 {
		sent := make(map[types.UID]sentPatch, len(p.sent))
		maps.Copy(sent, p.sent)
		p.sent, p.sentMost = sent, len(sent)
	}
}

// compact drops from passes the UIDs no longer queued and those a newer
// pass queued again, once they are half of what passes holds.
func (p *Publisher) compact() {
	if p.queued < 2*len(p.queue)+1024 {
		return
	}
	p.dedupe()
}

// deferPast lets go of the writes past MaxQueued that would go last: the tail
// of the oldest pass.
func (p *Publisher) deferPast() {
	if p.MaxQueued <= 0 || len(p.queue) <= p.MaxQueued {
		return
	}
	p.dedupe() // each UID listed once, by the newest pass that queued it
	for len(p.queue) > p.MaxQueued && len(p.passes) > 0 {
		uids := p.passes[0]
		if len(uids) == 0 {
			p.passes[0] = nil
			p.passes = p.passes[1:]
			continue
		}
		uid := uids[len(uids)-1]
		p.passes[0] = uids[:len(uids)-1]
		p.queued--
		delete(p.queue, uid)
		p.result("deferred")
	}
	// A map keeps the room it grew to: the queue is made anew at its size,
	// as is the pass cut short.
	queue := make(map[types.UID]job, len(p.queue))
	maps.Copy(queue, p.queue)
	p.queue = queue
	if len(p.passes) > 0 {
		p.passes[0] = slices.Clone(p.passes[0])
	}
}

// dedupe drops from passes the UIDs no longer queued and those a newer
// pass queued again.
func (p *Publisher) dedupe() {
	seen := make(map[types.UID]bool, len(p.queue))
	p.queued = 0
	for i := len(p.passes) - 1; i >= 0; i-- {
		uids := p.passes[i][:0] // filtered in place: each pass its own list
		for _, uid := range p.passes[i] {
			if _, ok := p.queue[uid]; ok && !seen[uid] {
				seen[uid] = true
				uids = append(uids, uid)
			}
		}
		p.passes[i] = uids
		p.queued += len(uids)
	}
	p.passes = slices.DeleteFunc(p.passes, func(uids []types.UID) bool { return len(uids) == 0 })
}

// take returns the next job: the newest pass's, in the order it gave.
func (p *Publisher) take() (job, bool) {
	for len(p.passes) > 0 {
		last := len(p.passes) - 1
		uids := p.passes[last]
		if len(uids) == 0 {
			p.passes[last] = nil
			p.passes = p.passes[:last]
			continue
		}
		uid := uids[0]
		p.passes[last] = uids[1:]
		p.queued--
		if j, ok := p.queue[uid]; ok {
			delete(p.queue, uid)
			if len(p.queue) == 0 {
				// The room a first start's patches took is given back.
				p.queue, p.passes, p.queued = map[types.UID]job{}, nil, 0
			}
			return j, true
		}
	}
	return job{}, false
}

// work writes queued jobs until the queue is empty or ctx is done.
func (p *Publisher) work(ctx context.Context) {
	defer p.idle.Done()
	for {
		p.mu.Lock()
		j, ok := job{}, false
		if ctx.Err() == nil {
			j, ok = p.take()
		}
		if !ok {
			p.running--
			p.mu.Unlock()
			return
		}
		if pp := j.patch; pp != nil {
			// Sent, unless it fails: a pass meanwhile need not queue it again.
			p.sent[pp.UID] = sentPatch{from: pp.ResourceVersion, sum: setSum(pp.Set)}
			p.sentMost = max(p.sentMost, len(p.sent))
		}
		p.countQueued()
		p.mu.Unlock()
		if j.patch != nil {
			p.patch(ctx, *j.patch)
		} else {
			p.writeClaim(ctx, *j.claim)
		}
	}
}

func (p *Publisher) countQueued() {
	if p.metrics != nil {
		p.metrics.PublicationsQueued(len(p.queue))
	}
}

func (p *Publisher) patch(ctx context.Context, pp reconcile.Publication) {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": pp.Annotations(),
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
	if err != nil {
		p.mu.Lock()
		delete(p.sent, pp.UID)
		p.mu.Unlock()
	}
	switch {
	case err == nil:
		p.result("patched")
		p.log.V(1).Info("published addresses", "kind", pp.Kind, "object", pp.Namespace+"/"+pp.Name, "annotations", pp.Annotations())
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsInvalid(err):
		// Gone, or replaced by a pod of the same name (the UID differs):
		// the next pass publishes for the new pod.
		p.result("gone")
	case ctx.Err() != nil:
		// Stepping down: the next pass that leads queues it again.
	default:
		p.mu.Lock()
		p.retry[pp.UID] = job{patch: &pp}
		p.mu.Unlock()
		p.result("error")
		p.log.Error(err, "publishing addresses failed; the next pass retries", "kind", pp.Kind, "object", pp.Namespace+"/"+pp.Name)
	}
}

func (p *Publisher) result(r string) {
	if p.metrics != nil {
		p.metrics.Publication(r)
	}
}

// setSum fingerprints a set of annotations, in any order: two sets of
// one sum are the same but for a 2^-64 chance.
func setSum(set []reconcile.Annotation) uint64 {
	var sum uint64
	for _, a := range set {
		var h maphash.Hash
		h.SetSeed(sumSeed)
		h.WriteString(a.Key)
		h.WriteByte(0)
		h.WriteString(a.Value)
		sum += h.Sum64()
	}
	return sum
}

var sumSeed = maphash.MakeSeed()

// Live returns the resourceVersion of every pod, VirtualMachine and
// IPAMClaim in, by UID, for Publish. It makes no stored pod (a full pass
// at 100,000 pods would make 130 MB of them again), and makes every
// stored VM in one VM's memory.
func Live(in desired.Inputs) map[types.UID]string {
	live := make(map[types.UID]string, in.PodCount()+in.VMCount()+len(in.IPAMClaims))
	for _, p := range in.Pods {
		live[p.UID] = p.ResourceVersion
	}
	if in.StoredPods != nil {
		for uid, rv := range in.StoredPods.Versions() {
			live[types.UID(uid)] = rv
		}
	}
	for _, vm := range in.ReadVMs() {
		live[vm.UID] = vm.ResourceVersion
	}
	for _, c := range in.IPAMClaims {
		live[c.UID] = c.ResourceVersion
	}
	return live
}

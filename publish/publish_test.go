package publish

import (
	"context"
	"fmt"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/internal/liveheap"
	"github.com/ovn-sync/ovn-sync/reconcile"
)

func TestProblemEventsDeduplicated(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	e := &Events{log: logr.Discard(), recorder: rec, seen: map[desired.Problem]bool{}}
	in := desired.Inputs{Pods: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bad", UID: "u"}}}}
	p := desired.Problem{Kind: "Pod", Namespace: "ns", Name: "bad", Reason: "InvalidAddressRequest", Message: `ovn.kubernetes.io/ip_address "x": not an IP address`}
	cfgProblem := desired.Problem{Kind: "Config", Name: "defaultNetwork", Reason: "X", Message: "y"}
	e.Report([]desired.Problem{p, cfgProblem}, in)
	e.Report([]desired.Problem{p}, in)
	e.Report(nil, in)
	e.Report([]desired.Problem{p}, in)
	close(rec.Events)
	var got []string
	for ev := range rec.Events {
		got = append(got, ev)
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], "Warning InvalidAddressRequest") {
		t.Errorf("events = %q, want the problem twice (it went away in between), the config problem never", got)
	}
}

// A problem on a pod run mode's stores list in their stored form
// (Inputs.StoredPods) is an Event on that pod, as one on a pod of Pods;
// Live names it.
func TestProblemEventsOnStoredPods(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	e := &Events{log: logr.Discard(), recorder: rec, seen: map[desired.Problem]bool{}}
	in := desired.Inputs{StoredPods: desired.PodCopies([]*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bad", UID: "u", ResourceVersion: "7"}}})}
	e.Report([]desired.Problem{{Kind: "Pod", Namespace: "ns", Name: "bad", Reason: "InvalidAddressRequest", Message: "m"}}, in)
	close(rec.Events)
	if got := len(rec.Events); got != 1 {
		t.Errorf("%d events, want one on the stored pod", got)
	}
	if live := Live(in); live["u"] != "7" {
		t.Errorf("Live = %v, want the stored pod's version", live)
	}
}

func TestPublisherSkipsOnlyUntilTheInformerCatchesUp(t *testing.T) {
	kube := kubefake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"}})
	m := &recorder{}
	p := NewPublisher(kube, nil, logr.Discard(), m)
	pp := reconcile.Publication{Kind: reconcile.KindPod, Namespace: "ns", Name: "a", UID: "uid-a", ResourceVersion: "1", Set: []reconcile.Annotation{{Key: "ovn.kubernetes.io/ip_address", Value: "10.16.0.2"}}}
	ctx := context.Background()
	publish := func(pp reconcile.Publication, live map[types.UID]string) {
		p.Publish(ctx, []reconcile.Publication{pp}, nil, live)
		p.idle.Wait()
	}
	publish(pp, map[types.UID]string{"uid-a": "1"})
	publish(pp, map[types.UID]string{"uid-a": "1"}) // the informer still shows version 1
	if len(p.sent) != 1 {
		t.Errorf("sent = %v, want what was sent to a", p.sent)
	}
	pp.ResourceVersion = "3" // someone removed the annotation since
	publish(pp, map[types.UID]string{"uid-a": "3"})
	gone := pp
	gone.Name, gone.UID = "b", "uid-b"
	publish(gone, map[types.UID]string{"uid-a": "4", "uid-b": "1"})
	if want := []string{"patched", "patched", "gone"}; !slices.Equal(m.results, want) {
		t.Errorf("publish results = %v, want %v", m.results, want)
	}
	if len(p.sent) != 0 {
		t.Errorf("sent = %v after a full pass that read newer versions of both, want nothing", p.sent)
	}
	got, err := kube.CoreV1().Pods("ns").Get(ctx, "a", metav1.GetOptions{})
	if err != nil || got.Annotations["ovn.kubernetes.io/ip_address"] != "10.16.0.2" {
		t.Errorf("pod a = %v, %v; want annotated", got, err)
	}
}

// TestPublisherSendsAChangeBeforeTheInformerCatchesUp: what is remembered
// of a patch tells a different one from it, though the informer still
// shows the version both were computed from.
func TestPublisherSendsAChangeBeforeTheInformerCatchesUp(t *testing.T) {
	kube := kubefake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"}})
	m := &recorder{}
	p := NewPublisher(kube, nil, logr.Discard(), m)
	ctx := context.Background()
	live := map[types.UID]string{"uid-a": "1"}
	const ip, mac = "ovn.kubernetes.io/ip_address", "ovn.kubernetes.io/mac_address"
	for _, set := range [][]reconcile.Annotation{
		{{Key: ip, Value: "10.16.0.2"}, {Key: mac, Value: "0a:58:0a:10:00:02"}},
		{{Key: mac, Value: "0a:58:0a:10:00:02"}, {Key: ip, Value: "10.16.0.2"}},
		{{Key: ip, Value: "10.16.0.3"}, {Key: mac, Value: "0a:58:0a:10:00:02"}},
		{{Key: ip, Value: "10.16.0.3"}},
	} {
		pp := reconcile.Publication{Kind: reconcile.KindPod, Namespace: "ns", Name: "a", UID: "uid-a", ResourceVersion: "1", Set: set}
		p.Publish(ctx, []reconcile.Publication{pp}, nil, live)
		p.idle.Wait()
	}
	// The second is the first in another order and is not sent; the third
	// and the fourth (which asks for less) are.
	if want := []string{"patched", "patched", "patched"}; !slices.Equal(m.results, want) {
		t.Errorf("publish results = %v, want %v", m.results, want)
	}
	got, err := kube.CoreV1().Pods("ns").Get(ctx, "a", metav1.GetOptions{})
	if err != nil || got.Annotations["ovn.kubernetes.io/ip_address"] != "10.16.0.3" {
		t.Errorf("pod a = %v, %v; want the last address", got, err)
	}
}

// TestPublisherRetriesWhatFailed: a patch that failed is sent again by the
// next Publish, which (after an incremental pass) may carry nothing for
// that object; a newer patch for it replaces the one that failed.
func TestPublisherRetriesWhatFailed(t *testing.T) {
	kube := kubefake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", UID: "uid-b"}})
	failures := 1
	kube.PrependReactor("patch", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		if failures > 0 {
			failures--
			return true, nil, apierrors.NewServiceUnavailable("try later")
		}
		return false, nil, nil
	})
	m := &recorder{}
	p := NewPublisher(kube, nil, logr.Discard(), m)
	ctx := context.Background()
	a := reconcile.Publication{Kind: reconcile.KindPod, Namespace: "ns", Name: "a", UID: "uid-a", ResourceVersion: "1", Set: []reconcile.Annotation{{Key: "ovn.kubernetes.io/ip_address", Value: "10.16.0.2"}}}
	b := a
	b.Name, b.UID = "b", "uid-b"
	p.Publish(ctx, []reconcile.Publication{a}, nil, nil)
	p.idle.Wait()
	p.Publish(ctx, []reconcile.Publication{b}, nil, nil) // a pass that rebuilt b only
	p.idle.Wait()
	slices.Sort(m.results[1:]) // a's retry and b run side by side
	if want := []string{"error", "patched", "patched"}; !slices.Equal(m.results, want) {
		t.Errorf("publish results = %v, want %v", m.results, want)
	}
	got, err := kube.CoreV1().Pods("ns").Get(ctx, "a", metav1.GetOptions{})
	if err != nil || got.Annotations["ovn.kubernetes.io/ip_address"] != "10.16.0.2" {
		t.Errorf("pod a = %v, %v; want annotated by the retry", got, err)
	}
}

// TestPublisherNewestPassFirst: a pass hands its writes over and goes on,
// and a later pass's writes go before what an earlier pass queued (a
// first start queues one patch a pod; a pod created meanwhile must not
// wait for them all). A newer write for an object replaces the queued one.
func TestPublisherNewestPassFirst(t *testing.T) {
	var objs []runtime.Object
	var first []reconcile.Publication
	for _, name := range []string{"a", "b", "c", "d"} {
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}})
		first = append(first, reconcile.Publication{Kind: reconcile.KindPod, Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
			ResourceVersion: "1", Set: []reconcile.Annotation{{Key: "ovn.kubernetes.io/ip_address", Value: "10.16.0.1"}}})
	}
	objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "new", UID: "uid-new"}})
	kube := kubefake.NewClientset(objs...)
	inFlight, hold := make(chan struct{}), make(chan struct{})
	var order []string
	kube.PrependReactor("patch", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if len(order) == 0 {
			close(inFlight)
			<-hold // the first write is slow: the next pass comes meanwhile
		}
		order = append(order, a.(clienttesting.PatchAction).GetName())
		return false, nil, nil
	})
	m := &recorder{}
	p := NewPublisher(kube, nil, logr.Discard(), m)
	p.workers = 1
	ctx := context.Background()
	p.Publish(ctx, first, nil, nil) // returns while the first write waits
	<-inFlight
	newer := first[0] // a, written again by the next pass
	newer.ResourceVersion, newer.Set = "2", []reconcile.Annotation{{Key: "ovn.kubernetes.io/ip_address", Value: "10.16.0.9"}}
	created := reconcile.Publication{Kind: reconcile.KindPod, Namespace: "ns", Name: "new", UID: "uid-new",
		ResourceVersion: "1", Set: []reconcile.Annotation{{Key: "ovn.kubernetes.io/ip_address", Value: "10.16.0.5"}}}
	p.Publish(ctx, []reconcile.Publication{created, newer}, nil, nil)
	if got := m.queued; got != 5 {
		t.Errorf("queued = %d, want 5 (b, c and d; new and a's newer patch)", got)
	}
	close(hold)
	p.idle.Wait()
	if want := []string{"a", "new", "a", "b", "c", "d"}; !slices.Equal(order, want) {
		t.Errorf("patched in the order %v, want %v: the newest pass first, each in its order", order, want)
	}
	got, err := kube.CoreV1().Pods("ns").Get(ctx, "a", metav1.GetOptions{})
	if err != nil || got.Annotations["ovn.kubernetes.io/ip_address"] != "10.16.0.9" {
		t.Errorf("pod a = %v, %v; want the newer patch", got.Annotations, err)
	}
	if m.queued != 0 {
		t.Errorf("queued = %d once written, want 0", m.queued)
	}
}

// TestPublisherDefersPastMaxQueued: past MaxQueued, the writes that would
// go last (the tail of the oldest pass) are let go, not the newest pass's;
// a full pass that decides them again sends them.
func TestPublisherDefersPastMaxQueued(t *testing.T) {
	var objs []runtime.Object
	pub := func(name string) reconcile.Publication {
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}})
		return reconcile.Publication{Kind: reconcile.KindPod, Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
			ResourceVersion: "1", Set: []reconcile.Annotation{{Key: "ovn.kubernetes.io/ip_address", Value: "10.16.0.1"}}}
	}
	first := []reconcile.Publication{pub("a"), pub("b"), pub("c")}
	created := pub("new")
	kube := kubefake.NewClientset(objs...)
	m := &recorder{}
	p := NewPublisher(kube, nil, logr.Discard(), m)
	p.MaxQueued, p.workers = 2, 0 // nothing is written until workers is set
	ctx := context.Background()
	p.Publish(ctx, first, nil, nil)
	p.Publish(ctx, []reconcile.Publication{created}, nil, nil)
	if want := []string{"deferred", "deferred"}; !slices.Equal(m.results, want) || m.queued != 2 {
		t.Errorf("results %v, queued %d; want c and then b deferred, 2 queued", m.results, m.queued)
	}
	p.workers = 1
	p.Publish(ctx, nil, nil, nil)
	p.idle.Wait()
	annotated := func() (names []string) {
		pods, _ := kube.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
		for _, pod := range pods.Items {
			if pod.Annotations["ovn.kubernetes.io/ip_address"] != "" {
				names = append(names, pod.Name)
			}
		}
		slices.Sort(names)
		return names
	}
	if got, want := annotated(), []string{"a", "new"}; !slices.Equal(got, want) {
		t.Errorf("annotated %v, want %v", got, want)
	}
	// The next full pass decides b and c again (a and new were sent).
	p.Publish(ctx, first[1:], nil, map[types.UID]string{"uid-a": "2", "uid-b": "1", "uid-c": "1", "uid-new": "2"})
	p.idle.Wait()
	if got, want := annotated(), []string{"a", "b", "c", "new"}; !slices.Equal(got, want) {
		t.Errorf("annotated after a full pass %v, want %v", got, want)
	}
}

// TestPublisherKeepsOnlyWhatWaits: past MaxQueued, the patches let go are
// not kept: the publisher holds about what waits, not the whole pass.
func TestPublisherKeepsOnlyWhatWaits(t *testing.T) {
	const n, limit = 20000, 2000
	p := NewPublisher(kubefake.NewClientset(), nil, logr.Discard(), nil)
	p.MaxQueued, p.workers = limit, 0 // nothing is written
	base := liveheap.Bytes()
	patches := make([]reconcile.Publication, n)
	for i := range patches {
		ip := fmt.Sprintf("10.%d.%d.%d", 16+i>>16, i>>8&255, i&255)
		patches[i] = reconcile.Publication{Kind: reconcile.KindPod, Namespace: "ns", Name: fmt.Sprintf("pod-%05d", i),
			UID: types.UID(fmt.Sprintf("uid-%05d", i)), ResourceVersion: "1", Set: []reconcile.Annotation{
				{Key: "ovn.kubernetes.io/allocated", Value: "true"}, {Key: "ovn.kubernetes.io/cidr", Value: "10.16.0.0/16"},
				{Key: "ovn.kubernetes.io/gateway", Value: "10.16.0.1"}, {Key: "ovn.kubernetes.io/ip_address", Value: ip},
				{Key: "ovn.kubernetes.io/logical_switch", Value: "ovn-default"},
				{Key: "ovn.kubernetes.io/mac_address", Value: fmt.Sprintf("0a:58:%02x:%02x:%02x:%02x", 10, 16, i>>8&255, i&255)},
				{Key: "ovn.kubernetes.io/routed", Value: "true"}}}
	}
	all := liveheap.Bytes() - base
	p.Publish(context.Background(), patches, nil, nil)
	patches = nil
	held := liveheap.Bytes() - base
	t.Logf("%d patches: %d KB; held once %d of them wait: %d KB", n, all>>10, limit, held>>10)
	if held > all/4 {
		t.Errorf("the publisher holds %d KB of a pass of %d KB with %d of %d patches queued; want at most a quarter", held>>10, all>>10, limit, n)
	}
	goruntime.KeepAlive(p)
}

// TestPublisherGivesBackItsRoom: once a first start's patches are written
// and a full pass forgets what was sent, the publisher holds no room for
// them: a map keeps the room it grew to, and a queue of one patch a pod
// would otherwise be held for good.
func TestPublisherGivesBackItsRoom(t *testing.T) {
	const n = 2000                  // the fake clientset writes slower the more it holds
	kube := kubefake.NewClientset() // which records every write: kept apart
	for i := range n {
		if _, err := kube.CoreV1().Pods("ns").Create(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: fmt.Sprintf("pod-%05d", i), UID: types.UID(fmt.Sprintf("uid-%05d", i))}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	p := NewPublisher(kube, nil, logr.Discard(), nil)
	base := liveheap.Bytes()
	patches := make([]reconcile.Publication, n)
	live := map[types.UID]string{}
	for i := range patches {
		uid := types.UID(fmt.Sprintf("uid-%05d", i))
		patches[i] = reconcile.Publication{Kind: reconcile.KindPod, Namespace: "ns", Name: fmt.Sprintf("pod-%05d", i),
			UID: uid, ResourceVersion: "1", Set: []reconcile.Annotation{{Key: "ovn.kubernetes.io/ip_address", Value: fmt.Sprint(i)}}}
		live[uid] = "2" // each pod patched: its version moved on
	}
	all := liveheap.Bytes() - base
	ctx := context.Background()
	p.Publish(ctx, patches, nil, nil) // each pod patched and remembered
	p.idle.Wait()
	patches = nil
	p.Publish(ctx, nil, nil, live) // the next full pass
	p.idle.Wait()
	live = nil
	if len(p.sent) != 0 || len(p.queue) != 0 {
		t.Fatalf("%d sent and %d queued remembered, want none", len(p.sent), len(p.queue))
	}
	with := liveheap.Bytes()
	goruntime.KeepAlive(p)
	p = nil
	held := with - liveheap.Bytes()
	t.Logf("%d patches: %d KB; held once written and forgotten: %d KB", n, all>>10, held>>10)
	if held > all/20 {
		t.Errorf("the publisher holds %d KB once %d patches (%d KB) were written and forgotten; want at most a twentieth", held>>10, n, all>>10)
	}
	goruntime.KeepAlive(kube)
}

type recorder struct {
	mu      sync.Mutex
	results []string
	queued  int
}

func (r *recorder) Publication(result string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results = append(r.results, result)
}

func (r *recorder) PublicationsQueued(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queued = n
}

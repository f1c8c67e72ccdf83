package main

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ovn-sync/ovn-sync/internal/kubetest"
	"github.com/ovn-sync/ovn-sync/sources"
)

// churnKinds are the kinds backgroundChurn writes, in the order it writes
// them.
var churnKinds = []sources.Kind{sources.KindStatefulSet, sources.KindNamespace, sources.KindIP, sources.KindSubnet}

// backgroundChurn writes, against a real API server, what a busy cluster's
// controllers write all the time and ovn-sync does not read, the way they
// write it, one object a write, round robin over churnKinds:
//
//   - StatefulSet web/web as the StatefulSet controller and kubectl write
//     it through a rolling restart: a restart (kubectl rollout restart's
//     template annotation, which moves generation), then three writes of
//     /status as its replicas become ready (readyReplicas,
//     availableReplicas, updatedReplicas, currentRevision,
//     observedGeneration);
//   - the labels of one Namespace, as a GitOps sync edits them (a merge
//     patch);
//   - kube-ovn's IP objects of web's pods, as kube-ovn-controller rewrites
//     one when a pod's sandbox is created again (an update of the whole
//     object with a new spec.containerID, which sources does not keep);
//   - kube-ovn Subnet churn's /status, as kube-ovn-controller patches it
//     at every allocation (v4usingIPs, v4availableIPs and their ranges).
//
// Its objects are made once, before any "ovn-sync run" starts (their
// ports are then part of every cold start): Subnet churn (10.77.0.0/24,
// namespace web), StatefulSet web with its three pods on it, and an IP
// object for each recording the port's address, as kube-ovn keeps one
// per pod.
type backgroundChurn struct {
	k   *kubetest.Server
	ns  string // the Namespace whose labels are edited
	set *appsv1.StatefulSet
	ips []*unstructured.Unstructured
	n   int // writes made, across phases: the values written follow it
}

// churnCount is what one phase of background writes made.
type churnCount struct {
	writes map[sources.Kind]int
	took   time.Duration
}

// total is the number of writes of every kind.
func (c churnCount) total() int {
	n := 0
	for _, w := range c.writes {
		n += w
	}
	return n
}

// newBackgroundChurn makes the objects the writes are to, and edits the
// labels of Namespace ns.
func newBackgroundChurn(t *testing.T, k *kubetest.Server, ns string) *backgroundChurn {
	t.Helper()
	ctx := context.Background()
	k.Namespace("web")
	k.Create(sources.GVRSubnet, `
apiVersion: kubeovn.io/v1
kind: Subnet
metadata: {name: churn}
spec: {cidrBlock: 10.77.0.0/24, gateway: 10.77.0.1, protocol: IPv4, namespaces: [web]}
`)
	set, err := k.Kube.AppsV1().StatefulSets("web").Create(ctx, webStatefulSet("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := &backgroundChurn{k: k, ns: ns, set: set}
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: set.Name, UID: set.UID,
		Controller: new(true), BlockOwnerDeletion: new(true)}
	for i := range int(*set.Spec.Replicas) {
		name, node := fmt.Sprintf("web-%d", i), fmt.Sprintf("node-%d", i)
		p := pausePod("web", name, node)
		p.OwnerReferences = []metav1.OwnerReference{owner}
		p.Labels = map[string]string{"app": "web", "statefulset.kubernetes.io/pod-name": name}
		createPod(t, k, p)
		c.ips = append(c.ips, k.Create(sources.GVRIP, fmt.Sprintf(`
apiVersion: kubeovn.io/v1
kind: IP
metadata:
  name: %[1]s.web
  labels: {ovn.kubernetes.io/subnet: churn, ovn.kubernetes.io/node-name: %[2]s, churn: ""}
spec:
  podName: %[1]s
  namespace: web
  subnet: churn
  nodeName: %[2]s
  ipAddress: 10.77.0.%[3]d
  v4IpAddress: 10.77.0.%[3]d
  macAddress: "00:00:00:4d:00:%02[3]x"
  containerID: %[4]s
  podType: StatefulSet
`, name, node, 10+i, containerID(i))))
	}
	return c
}

// webStatefulSet is StatefulSet web of namespace ns: three replicas
// labelled app=web, with no pods (no controller runs to make them).
func webStatefulSet(ns string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{Replicas: new(int32(3)), ServiceName: "web",
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}}}},
	}
}

// containerID is the i-th sandbox's ID, 64 hex digits as the runtime's.
func containerID(i int) string { return fmt.Sprintf("%064x", 0xc0ffee0000+i) }

// start writes at rate writes a second until the returned stop is called;
// stop lets the write under way finish (one cut short could still be taken
// by the server, leaving the writer's copy of the object behind its
// resourceVersion) and returns what the phase wrote, failing t with a write
// that failed (the writes stop at the first).
func (c *backgroundChurn) start(t *testing.T, rate float64) (stop func() churnCount) {
	done := make(chan struct{})
	count := churnCount{writes: map[sources.Kind]int{}}
	var failed error
	var wg sync.WaitGroup
	begin := time.Now()
	wg.Go(func() {
		tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			kind, err := c.write(ctx)
			cancel()
			if err != nil {
				failed = fmt.Errorf("write %d (%s): %w", c.n, kind, err)
				return
			}
			count.writes[kind]++
		}
	})
	return func() churnCount {
		close(done)
		wg.Wait()
		count.took = time.Since(begin)
		if failed != nil {
			t.Errorf("background writes: %v", failed)
		}
		return count
	}
}

// write makes the next write of the round.
func (c *backgroundChurn) write(ctx context.Context) (sources.Kind, error) {
	kind := churnKinds[c.n%len(churnKinds)]
	round := c.n / len(churnKinds)
	var err error
	switch kind {
	case sources.KindStatefulSet:
		err = c.writeStatefulSet(ctx, round)
	case sources.KindNamespace:
		patch := fmt.Sprintf(`{"metadata":{"labels":{"sync.example.com/revision":"r%d"}}}`, round)
		_, err = c.k.Kube.CoreV1().Namespaces().Patch(ctx, c.ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	case sources.KindIP:
		i := round % len(c.ips)
		ip := c.ips[i].DeepCopy()
		if err = unstructured.SetNestedField(ip.Object, containerID(len(c.ips)*(1+round)+i), "spec", "containerID"); err == nil {
			ip, err = c.k.Dynamic.Resource(sources.GVRIP).Update(ctx, ip, metav1.UpdateOptions{})
		}
		if err == nil {
			c.ips[i] = ip
		}
	case sources.KindSubnet:
		using := 3 + round%8
		patch := fmt.Sprintf(`{"status":{"v4usingIPs":%d,"v4availableIPs":%d,"v4usingIPrange":"10.77.0.10-10.77.0.%d","v4availableIPrange":"10.77.0.2-10.77.0.9,10.77.0.%d-10.77.0.254"}}`,
			using, 253-using, 10+using-1, 10+using)
		_, err = c.k.Dynamic.Resource(sources.GVRSubnet).Patch(ctx, "churn", types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	}
	c.n++
	return kind, err
}

// writeStatefulSet makes the round-th write of a rolling restart of web:
// the restart, then its replicas becoming ready one by one.
func (c *backgroundChurn) writeStatefulSet(ctx context.Context, round int) error {
	sets := c.k.Kube.AppsV1().StatefulSets("web")
	var set *appsv1.StatefulSet
	var err error
	if step := round % 4; step == 0 {
		patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`,
			time.Now().UTC().Format(time.RFC3339Nano))
		set, err = sets.Patch(ctx, "web", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	} else {
		s := c.set.DeepCopy()
		rev := fmt.Sprintf("web-%x", s.Generation)
		s.Status = appsv1.StatefulSetStatus{ObservedGeneration: s.Generation, Replicas: 3,
			ReadyReplicas: int32(step), AvailableReplicas: int32(step), UpdatedReplicas: int32(step), CurrentReplicas: int32(3 - step),
			CurrentRevision: s.Status.CurrentRevision, UpdateRevision: rev}
		if step == 3 {
			s.Status.CurrentRevision, s.Status.CurrentReplicas = rev, 3
		}
		set, err = sets.UpdateStatus(ctx, s, metav1.UpdateOptions{})
	}
	// A failed write returns an empty object: the next round writes from
	// the last one the server took.
	if err == nil {
		c.set = set
	}
	return err
}

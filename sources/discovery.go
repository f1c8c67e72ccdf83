package sources

import (
	"context"
	"fmt"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// Discover checks again for custom resources found missing before and
// starts informers for those installed since. It is a no-op before Start.
func (s *Informers) Discover(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return nil
	}
	return s.discoverLocked(ctx)
}

func (s *Informers) discoverLocked(ctx context.Context) error {
	var missing []Kind
	for _, k := range Kinds {
		if _, ok := s.inf[k]; !ok && !builtIn(k) {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	present, err := s.served(ctx, missing)
	if err != nil {
		return err
	}
	for _, k := range missing {
		if !present[k] {
			if !s.absent[k] {
				s.opts.Logger.Info("custom resource not installed: treating it as empty until its CRD appears", "kind", k, "resource", kindDefOf(k).resource.String())
				s.absent[k] = true
				s.watchCRD(k)
			}
			continue
		}
		if s.absent[k] {
			s.opts.Logger.Info("custom resource installed: watching it", "kind", k, "resource", kindDefOf(k).resource.String())
			delete(s.absent, k)
		}
		ix := indexers[k]
		if ix == nil {
			ix = cache.Indexers{}
		}
		inf := dynamicinformer.NewFilteredDynamicInformer(s.opts.Dynamic, kindDefOf(k).resource, metav1.NamespaceAll, 0, ix, nil).Informer()
		_ = inf.SetTransform(s.recording(func(any) Kind { return k }, compacting(typedTransform(k))))
		s.watch(k, inf)
		go inf.Run(s.ctx.Done())
	}
	// A kind that appeared changes the inputs.
	s.notify()
	return nil
}

// served reports which of kinds the API server serves.
func (s *Informers) served(ctx context.Context, kinds []Kind) (map[Kind]bool, error) {
	byGV := map[string][]Kind{}
	for _, k := range kinds {
		gv := kindDefOf(k).resource.GroupVersion().String()
		byGV[gv] = append(byGV[gv], k)
	}
	present := map[Kind]bool{}
	gvs := make([]string, 0, len(byGV))
	for gv := range byGV {
		gvs = append(gvs, gv)
	}
	sort.Strings(gvs)
	for _, gv := range gvs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		list, err := s.disco.ServerResourcesForGroupVersion(gv)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("discover %s: %w", gv, err)
		}
		for _, r := range list.APIResources {
			for _, k := range byGV[gv] {
				if r.Name == kindDefOf(k).resource.Resource {
					present[k] = true
				}
			}
		}
	}
	return present, nil
}

// Absent lists the custom kinds found not installed.
func (s *Informers) Absent() []Kind {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Kind
	for _, k := range Kinds {
		if s.absent[k] {
			out = append(out, k)
		}
	}
	return out
}

// crdName is the name of the CRD that defines kind k: "<plural>.<group>".
func crdName(k Kind) string {
	return kindDefOf(k).resource.Resource + "." + kindDefOf(k).resource.Group
}

// watchCRD watches the one CustomResourceDefinition that would define the
// absent kind k (a field selector on its name: nothing else of the
// cluster's CRDs is listed or held) and runs discovery as soon as it is
// established, so that objects of a kind installed after start are read
// within seconds rather than at the next resync. The watch ends with the
// informers. If it cannot list CRDs (RBAC of an older release), discovery
// at every resync still finds the kind.
func (s *Informers) watchCRD(k Kind) {
	if s.crdWatched[k] {
		return
	}
	s.crdWatched[k] = true
	name := crdName(k)
	inf := dynamicinformer.NewFilteredDynamicInformer(s.opts.Dynamic, GVRCustomResourceDefinition, "", 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + name })
	seen := func(obj any) {
		u, ok := Unwrap(obj).(*unstructured.Unstructured)
		if !ok || !CRDEstablished(u) {
			return
		}
		// The API server may serve the kind a moment after the CRD is
		// established: look until it does, for a while.
		go func() {
			for wait := 100 * time.Millisecond; wait < 30*time.Second; wait *= 2 {
				if err := s.Discover(s.ctx); err != nil && s.ctx.Err() == nil {
					s.opts.Logger.Error(err, "discovery after a CRD appeared failed", "crd", name)
				}
				if !s.isAbsent(k) {
					return
				}
				select {
				case <-s.ctx.Done():
					return
				case <-time.After(wait):
				}
			}
			s.opts.Logger.Info("CRD established but its kind not served yet; the next resync looks again", "crd", name)
		}()
	}
	_, _ = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    seen,
		UpdateFunc: func(_, cur any) { seen(cur) },
	})
	go inf.Informer().Run(s.ctx.Done())
}

func (s *Informers) isAbsent(k Kind) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.absent[k]
}

// CRDEstablished reports whether a CustomResourceDefinition's Established
// condition is True: its resource is served.
func CRDEstablished(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

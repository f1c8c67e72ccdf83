// Package sources reads the Kubernetes objects ovn-sync reconciles and hands
// them to package desired as desired.Inputs.
//
// ReadManifests reads YAML or JSON manifest files the way kubectl does
// (multi-document files, kind: List, directories); it feeds the one-shot
// plan and apply commands and the demo. The documents of a YAML file are
// decoded on GOMAXPROCS goroutines, and the plain ones kubectl prints
// without go-yaml (simpleYAML); the result, notes and errors are
// those of decoding them one by one with kubectl's decoder.
//
// Informers watches a cluster for run mode:
//
//	inf := sources.NewInformers(sources.InformerOptions{Kube: kube, Dynamic: dyn, Logger: log})
//	if err := inf.Start(ctx); err != nil { ... }  // discovery failed: call again
//	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
//	for range inf.Changes() {                      // coalesced: one pending at most
//		snap := inf.Take()                          // every object, re-read from the stores,
//		                                            // and which changed since the last Take
//		                                            // (snap.Changed); Inputs leaves those
//		...
//	}
//
// TakeChanges is Take without the listing: what changed, and lookups of the
// objects in the stores (by key, and through indexes the informers keep), so
// that a pass that rebuilds what changed costs that, not the cluster.
//
// Pods, Namespaces and StatefulSets come from typed informers. The seven
// custom kinds (KubeVirt's VirtualMachine, VirtualMachineInstance and
// VirtualMachineInstanceMigration, Multus's NetworkAttachmentDefinition,
// kube-ovn's Subnet and IP, and k8snetworkplumbingwg's IPAMClaim) come from
// dynamic informers whose transform converts each object into its API type
// (kubevirt.io/api, the NAD API, or ovn-sync's apis/) as it enters the
// store. Dynamic rather than typed clients: KubeVirt's typed
// clientset (kubevirt.io/client-go) pins its own Kubernetes libraries and
// drags in dozens of modules, and the NAD client's generated informers were
// built against client-go 0.29; the dynamic client needs neither, and one
// code path handles a missing CRD the same way for all of them. An
// object that does not convert is kept, reported in Snapshot.Unreadable
// (and Changes.Unreadable), and must stop the caller from deleting anything
// that pass.
//
// Event handlers note no more of an object than its kind, namespace and
// name: they record it for the next Snapshot.Changed and signal Changes.
// An update whose stored form reads as the old one did (it changed only
// what the transforms drop: a StatefulSet's status, a Namespace's labels,
// managed fields) records nothing and signals nothing:
// InformerOptions.OnDrop counts it. The caller starts the informers (Start
// runs client-go's goroutines until ctx is done) and calls Discover at its
// resyncs; the package keeps no clock of its own but the backoff between
// discovery attempts after a CRD is established.
package sources

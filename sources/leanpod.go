package sources

import (
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// leanPod makes the Pod a plain YAML document v (simpleYAML's tree) holds
// straight into the form the informers keep (decodePod's): its metadata
// (objectMeta), and of the rest only spec.nodeName, spec.hostNetwork and
// status.phase, read from the tree as encoding/json would read them. The
// rest of the document (containers, volumes, statuses: most of a pod) is
// never written as JSON nor read. ok is false where encoding/json might
// read the document otherwise or refuse it — a field of another type, a
// key that matches only ignoring case, metadata it does not take — and
// the document must go the JSON way, which gives the same pod or its
// error.
func leanPod(v *yamlValue, tm metav1.TypeMeta) (*corev1.Pod, bool) {
	meta, ok := field(v, "metadata")
	if !ok || meta == nil || meta.kind != 'm' {
		return nil, false
	}
	spec, ok1 := field(v, "spec")
	status, ok2 := field(v, "status")
	if !ok1 || !ok2 {
		return nil, false
	}
	// The strings the pod keeps are copies: a string of the tree is part
	// of the whole document's text.
	p := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: strings.Clone(tm.APIVersion), Kind: strings.Clone(tm.Kind)}}
	node, ok3 := stringField(spec, "nodeName")
	var ok4 bool
	p.Spec.HostNetwork, ok4 = boolField(spec, "hostNetwork")
	phase, ok5 := stringField(status, "phase")
	if !ok3 || !ok4 || !ok5 {
		return nil, false
	}
	p.Spec.NodeName, p.Status.Phase = strings.Clone(node), corev1.PodPhase(strings.Clone(phase))
	m, ok := objectMeta(meta)
	if !ok {
		return nil, false
	}
	p.ObjectMeta = leanMeta(m)
	return p, true
}

// objectMeta reads mapping v as encoding/json reads a metav1.ObjectMeta,
// every string kept a copy of its own (not of the document's text). ok is
// false for what it leaves to encoding/json: a field of another type, a
// key that matches a field only ignoring case, a null in a map or list,
// managed fields, and the selfLink no API server writes any more.
func objectMeta(v *yamlValue) (m metav1.ObjectMeta, ok bool) {
	for i := range v.keys {
		e := &v.keys[i]
		val := &e.val
		switch e.key {
		case "name":
			m.Name, ok = metaString(val)
		case "generateName":
			m.GenerateName, ok = metaString(val)
		case "namespace":
			m.Namespace, ok = metaString(val)
		case "uid":
			var uid string
			uid, ok = metaString(val)
			m.UID = types.UID(uid)
		case "resourceVersion":
			m.ResourceVersion, ok = metaString(val)
		case "generation":
			m.Generation, ok = metaInt(val)
		case "creationTimestamp":
			m.CreationTimestamp, ok = metaTime(val)
		case "deletionTimestamp":
			m.DeletionTimestamp, ok = metaPointer(val, metaTime)
		case "deletionGracePeriodSeconds":
			m.DeletionGracePeriodSeconds, ok = metaPointer(val, metaInt)
		case "labels":
			m.Labels, ok = metaMap(val)
		case "annotations":
			m.Annotations, ok = metaMap(val)
		case "ownerReferences":
			m.OwnerReferences, ok = ownerReferences(val)
		case "finalizers":
			m.Finalizers, ok = metaStrings(val)
		default:
			ok = !matchesIgnoringCase(e.key, objectMetaKeys)
		}
		if !ok {
			return m, false
		}
	}
	return m, true
}

// objectMetaKeys are the keys of metav1.ObjectMeta's JSON.
var objectMetaKeys = []string{"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
	"generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
	"annotations", "ownerReferences", "finalizers", "managedFields"}

// ownerReferenceKeys are the keys of metav1.OwnerReference's JSON.
var ownerReferenceKeys = []string{"apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"}

// matchesIgnoringCase reports whether encoding/json might read key into
// one of the fields named keys.
func matchesIgnoringCase(key string, keys []string) bool {
	for _, k := range keys {
		if strings.EqualFold(key, k) {
			return true
		}
	}
	return false
}

func isNull(v *yamlValue) bool { return v.kind == 's' && v.raw == "null" }

// metaPointer reads a pointer field: null for nil, else what read reads.
func metaPointer[T any](v *yamlValue, read func(*yamlValue) (T, bool)) (*T, bool) {
	if isNull(v) {
		return nil, true
	}
	x, ok := read(v)
	return &x, ok
}

// metaString reads a string, or null for "".
func metaString(v *yamlValue) (string, bool) {
	switch {
	case v.kind == 't':
		return strings.Clone(v.raw), true
	case isNull(v):
		return "", true
	}
	return "", false
}

// metaInt reads an integer, or null for 0.
func metaInt(v *yamlValue) (int64, bool) {
	if isNull(v) {
		return 0, true
	}
	if v.kind != 's' || !isInt(v.raw) {
		return 0, false
	}
	n, err := strconv.ParseInt(v.raw, 10, 64)
	return n, err == nil
}

// metaTime reads a metav1.Time as its UnmarshalJSON does: an RFC 3339
// string, in the local zone, or null for the zero time.
func metaTime(v *yamlValue) (metav1.Time, bool) {
	switch {
	case isNull(v):
		return metav1.Time{}, true
	case v.kind != 't':
		return metav1.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, v.raw)
	return metav1.Time{Time: t.Local()}, err == nil
}

// metaMap reads a map of strings: null for nil, {} for an empty map.
func metaMap(v *yamlValue) (map[string]string, bool) {
	switch {
	case isNull(v):
		return nil, true
	case v.kind != 'm':
		return nil, false
	}
	m := make(map[string]string, len(v.keys))
	for i := range v.keys {
		e := &v.keys[i]
		if e.val.kind != 't' {
			return nil, false
		}
		m[strings.Clone(e.key)] = strings.Clone(e.val.raw)
	}
	return m, true
}

// metaStrings reads a list of strings: null for nil, [] for an empty list.
func metaStrings(v *yamlValue) ([]string, bool) {
	switch {
	case isNull(v):
		return nil, true
	case v.kind != 'q':
		return nil, false
	}
	l := make([]string, len(v.items))
	for i := range v.items {
		if v.items[i].kind != 't' {
			return nil, false
		}
		l[i] = strings.Clone(v.items[i].raw)
	}
	return l, true
}

// ownerReferences reads a list of metav1.OwnerReference.
func ownerReferences(v *yamlValue) ([]metav1.OwnerReference, bool) {
	switch {
	case isNull(v):
		return nil, true
	case v.kind != 'q':
		return nil, false
	}
	refs := make([]metav1.OwnerReference, len(v.items))
	for i := range v.items {
		item := &v.items[i]
		if item.kind != 'm' {
			return nil, false
		}
		for j := range item.keys {
			e := &item.keys[j]
			r, ok := &refs[i], false
			switch e.key {
			case "apiVersion":
				r.APIVersion, ok = metaString(&e.val)
			case "kind":
				r.Kind, ok = metaString(&e.val)
			case "name":
				r.Name, ok = metaString(&e.val)
			case "uid":
				var uid string
				uid, ok = metaString(&e.val)
				r.UID = types.UID(uid)
			case "controller":
				r.Controller, ok = metaBool(&e.val)
			case "blockOwnerDeletion":
				r.BlockOwnerDeletion, ok = metaBool(&e.val)
			default:
				ok = !matchesIgnoringCase(e.key, ownerReferenceKeys)
			}
			if !ok {
				return nil, false
			}
		}
	}
	return refs, true
}

// metaBool reads a *bool: true or false, or null for nil.
func metaBool(v *yamlValue) (*bool, bool) {
	switch {
	case isNull(v):
		return nil, true
	case v.kind == 's' && (v.raw == "true" || v.raw == "false"):
		b := v.raw == "true"
		return &b, true
	}
	return nil, false
}

// field returns the value of key in mapping v (nil when absent, or when v
// is absent or null); ok is false where encoding/json would read v
// otherwise: v is not a mapping, or a key matches key only ignoring case.
func field(v *yamlValue, key string) (*yamlValue, bool) {
	switch {
	case v == nil || v.kind == 's' && v.raw == "null":
		return nil, true
	case v.kind != 'm':
		return nil, false
	}
	var found *yamlValue
	for i := range v.keys {
		e := &v.keys[i]
		switch {
		case e.key == key:
			found = &e.val
		case strings.EqualFold(e.key, key):
			return nil, false
		}
	}
	return found, true
}

// stringField reads key of mapping v as a string: a string, or null or
// absent for "".
func stringField(v *yamlValue, key string) (string, bool) {
	f, ok := field(v, key)
	switch {
	case !ok:
		return "", false
	case f == nil || f.kind == 's' && f.raw == "null":
		return "", true
	case f.kind == 't':
		return f.raw, true
	}
	return "", false
}

// boolField reads key of mapping v as a bool: true or false, or null or
// absent for false.
func boolField(v *yamlValue, key string) (bool, bool) {
	f, ok := field(v, key)
	switch {
	case !ok:
		return false, false
	case f == nil:
		return false, true
	case f.kind == 's' && (f.raw == "null" || f.raw == "false"):
		return false, true
	case f.kind == 's' && f.raw == "true":
		return true, true
	}
	return false, false
}

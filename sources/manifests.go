package sources

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/ovn-sync/ovn-sync/desired"
	"github.com/ovn-sync/ovn-sync/state"
)

// Note is something ReadManifests skipped but wants the user to know about.
type Note struct {
	File  string
	Index int // the document's position in the file, from 0
	Text  string
}

func (n Note) String() string { return fmt.Sprintf("%s: document %d: %s", n.File, n.Index, n.Text) }

// ReadManifests reads every object of the kinds ovn-sync uses from the given
// files and directories. Directories are read non-recursively, like
// kubectl -f, taking files ending .yaml, .yml or .json in name order.
// Objects of other kinds are skipped with a Note. A document that cannot be
// decoded is an error naming the file and document index: with manifests,
// half an input is worse than none.
func ReadManifests(paths []string) (desired.Inputs, []Note, error) {
	return ReadManifestsFS(osFS{}, paths)
}

// Stdin is the path that names standard input, as in kubectl -f -.
const Stdin = "-"

// ReadManifestsStdin is ReadManifests where the path Stdin reads stdin to
// its end, once: naming it twice is an error.
func ReadManifestsStdin(paths []string, stdin io.Reader) (desired.Inputs, []Note, error) {
	if n := countOf(paths, Stdin); n > 1 {
		return desired.Inputs{}, nil, fmt.Errorf("-f %s: standard input given %d times; it can be read once", Stdin, n)
	}
	return ReadManifestsFS(&stdinFS{r: stdin}, paths)
}

func countOf(l []string, s string) int {
	n := 0
	for _, e := range l {
		if e == s {
			n++
		}
	}
	return n
}

// stdinFS is osFS where the name Stdin is a file holding what r reads.
type stdinFS struct {
	osFS
	r io.Reader
}

func (s *stdinFS) Stat(name string) (fs.FileInfo, error) {
	if name == Stdin {
		return stdinInfo{}, nil
	}
	return s.osFS.Stat(name)
}

func (s *stdinFS) ReadFile(name string) ([]byte, error) {
	if name != Stdin {
		return s.osFS.ReadFile(name)
	}
	if s.r == nil {
		return nil, errors.New("standard input: nothing to read")
	}
	data, err := io.ReadAll(s.r)
	if err != nil {
		return nil, fmt.Errorf("standard input: %w", err)
	}
	return data, nil
}

// stdinInfo describes standard input to expand: a file, not a directory.
type stdinInfo struct{}

func (stdinInfo) Name() string       { return Stdin }
func (stdinInfo) Size() int64        { return 0 }
func (stdinInfo) Mode() fs.FileMode  { return 0 }
func (stdinInfo) ModTime() time.Time { return time.Time{} }
func (stdinInfo) IsDir() bool        { return false }
func (stdinInfo) Sys() any           { return nil }

// ReadManifestsFS is ReadManifests reading from fsys, e.g. manifests embedded
// in the binary.
func ReadManifestsFS(fsys fs.FS, paths []string) (desired.Inputs, []Note, error) {
	var in desired.Inputs
	var notes []Note
	files, err := expand(fsys, paths)
	if err != nil {
		return in, nil, err
	}
	seen := map[string]string{} // "Kind ns/name" -> file
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return in, nil, err
		}
		before := counts(in)
		n, err := decodeFile(f, data, &in)
		if err != nil {
			return in, nil, err
		}
		notes = append(notes, n...)
		if err := checkDuplicates(in, before, f, seen); err != nil {
			return in, nil, err
		}
	}
	return in, notes, nil
}

// Count returns how many objects in holds, of every kind.
func Count(in desired.Inputs) int {
	n := 0
	for _, c := range counts(in) {
		n += c
	}
	return n
}

// counts is how many objects of each kind in has, in the table's order.
func counts(in desired.Inputs) []int {
	n := make([]int, len(kindDefs))
	for i, d := range kindDefs {
		n[i] = d.count(in)
	}
	return n
}

// checkDuplicates rejects an object defined twice: with two definitions
// there is no telling which one the user means. from are the counts of
// each kind before file was read (counts).
func checkDuplicates(in desired.Inputs, from []int, file string, seen map[string]string) error {
	var errs []error
	for i, d := range kindDefs {
		for o := range d.objects(in, from[i]) {
			key := string(d.kind) + " " + o.GetNamespace() + "/" + o.GetName()
			if prev, ok := seen[key]; ok {
				errs = append(errs, fmt.Errorf("%s is defined twice: in %s and in %s", key, prev, file))
				break
			}
			seen[key] = file
		}
	}
	return errors.Join(errs...)
}

// osFS reads the host's files by the paths the user typed, relative or absolute.
type osFS struct{}

func (osFS) Open(name string) (fs.File, error)          { return os.Open(name) }
func (osFS) Stat(name string) (fs.FileInfo, error)      { return os.Stat(name) }
func (osFS) ReadFile(name string) ([]byte, error)       { return os.ReadFile(name) }
func (osFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

func expand(fsys fs.FS, paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		st, err := fs.Stat(fsys, p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		entries, err := fs.ReadDir(fsys, p)
		if err != nil {
			return nil, err
		}
		var names []string
		for _, e := range entries {
			if e.Type()&fs.ModeType != 0 {
				continue
			}
			switch strings.ToLower(filepath.Ext(e.Name())) {
			case ".yaml", ".yml", ".json":
				names = append(names, path.Join(p, e.Name()))
			}
		}
		sort.Strings(names)
		files = append(files, names...)
	}
	return files, nil
}

// decodeFile decodes every document of one file into in, in document
// order. A JSON stream is decoded as it is read; a YAML stream is split into
// documents first and the documents decoded on GOMAXPROCS workers, then
// added in document order, so that in, the notes and the error (the first
// document's that fails, by index) are what reading them one by one gives.
func decodeFile(file string, data []byte, in *desired.Inputs) ([]Note, error) {
	if utilyaml.IsJSONBuffer(data[:min(len(data), guessBytes)]) {
		return decodeStream(file, data, in)
	}
	return decodeYAML(file, data, in, runtime.GOMAXPROCS(0))
}

// guessBytes is how much of a file is looked at to tell JSON from YAML, as
// kubectl looks.
const guessBytes = 4096

// decodeStream decodes data one document after the other.
func decodeStream(file string, data []byte, in *desired.Inputs) ([]Note, error) {
	var notes []Note
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), guessBytes)
	for i := 0; ; i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return notes, nil
			}
			return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
		}
		n, err := decodeDocument(file, i, raw, nil, in)
		if err != nil {
			return nil, err
		}
		notes = append(notes, n...)
	}
}

// decodeDocument adds the objects of the i-th document of file, raw as
// JSON, to in. tm, if known, is the document's apiVersion and kind.
func decodeDocument(file string, i int, raw json.RawMessage, tm *metav1.TypeMeta, in *desired.Inputs) ([]Note, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
		return nil, nil
	}
	n, err := addObject(raw, tm, in)
	if err != nil {
		return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
	}
	var notes []Note
	for _, t := range n {
		notes = append(notes, Note{File: file, Index: i, Text: t})
	}
	return notes, nil
}

// chunkDocs is how many consecutive documents a worker decodes at a time.
const chunkDocs = 64

// decoded is what a run of consecutive documents gave.
type decoded struct {
	in    desired.Inputs
	notes []Note
	err   error
}

// decodeYAML is decodeFile for a YAML stream, on up to workers goroutines.
func decodeYAML(file string, data []byte, in *desired.Inputs, workers int) ([]Note, error) {
	docs, splitErr := splitYAML(data)
	chunks := make([]decoded, (len(docs)+chunkDocs-1)/chunkDocs)
	decodeChunk := func(c int) {
		first := c * chunkDocs
		r := &chunks[c]
		var p yamlLines
		for j, doc := range docs[first:min(first+chunkDocs, len(docs))] {
			i := first + j
			raw, tm, ok, done := decodePlainYAML(&p, doc, &r.in)
			if done {
				continue
			}
			if !ok {
				// The decoder kubectl's reading uses, on this one
				// document: the same JSON, and the same errors.
				if err := utilyaml.NewYAMLToJSONDecoder(bytes.NewReader(doc)).Decode((*json.RawMessage)(&raw)); err != nil && !errors.Is(err, io.EOF) {
					r.err = fmt.Errorf("%s: document %d: %w", file, i, err)
					return
				}
			}
			n, err := decodeDocument(file, i, raw, tm, &r.in)
			if err != nil {
				r.err = err
				return
			}
			r.notes = append(r.notes, n...)
		}
	}
	if workers = min(workers, len(chunks)); workers <= 1 {
		for c := range chunks {
			if decodeChunk(c); chunks[c].err != nil {
				break
			}
		}
	} else {
		// Workers take chunks in order; once a chunk fails, later chunks
		// are not started (their results would not be used).
		var next atomic.Int64
		var failed atomic.Bool
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !failed.Load() {
					c := int(next.Add(1) - 1)
					if c >= len(chunks) {
						return
					}
					if decodeChunk(c); chunks[c].err != nil {
						failed.Store(true)
					}
				}
			}()
		}
		wg.Wait()
	}
	var notes []Note
	for c := range chunks {
		r := &chunks[c]
		if r.err != nil {
			return nil, r.err
		}
		appendInputs(in, &r.in)
		notes = append(notes, r.notes...)
		chunks[c] = decoded{}
	}
	if splitErr != nil {
		return nil, fmt.Errorf("%s: document %d: %w", file, len(docs), splitErr)
	}
	return notes, nil
}

// decodePlainYAML reads doc when it is a plain YAML document (simpleYAML's
// subset): a Pod that leanPod reads (most of what kubectl prints) straight
// into in (done), anything else into the JSON simpleYAML gives (ok). When
// neither, the document must go the general way.
func decodePlainYAML(p *yamlLines, doc []byte, in *desired.Inputs) (raw []byte, tm *metav1.TypeMeta, ok, done bool) {
	v, ok := p.parse(doc)
	switch {
	case !ok:
		return nil, nil, false, false
	case v == nil:
		return []byte("null"), nil, true, false
	}
	tm = v.typeMeta()
	if tm != nil && tm.Kind == state.KindPod && tm.APIVersion == "v1" {
		if p, ok := leanPod(v, *tm); ok && p.Name != "" {
			return nil, nil, true, appendObject(p, &in.Pods) == nil
		}
	}
	return v.appendJSON(make([]byte, 0, len(doc))), tm, true, false
}

// splitYAML splits a YAML stream into its documents as kubectl's reader
// does. When the reader fails, docs are the documents before the one it
// failed on.
func splitYAML(data []byte) (docs [][]byte, err error) {
	if docs, ok := splitPlainYAML(data); ok {
		return docs, nil
	}
	return readYAMLDocs(data)
}

// splitPlainYAML splits data into the documents kubectl's reader
// (readYAMLDocs) gives, as slices of data rather than copies, when data
// holds no carriage return (the reader reads "\r\n" as "\n") and no
// separator line the reader refuses; ok is false otherwise. The reader
// reads line by line: a line starting "---" (then only spaces or a
// comment) ends a document that holds something and is dropped, and
// otherwise begins the next; a last line without a newline gets one.
func splitPlainYAML(data []byte) (docs [][]byte, ok bool) {
	if bytes.IndexByte(data, '\r') >= 0 {
		return nil, false
	}
	start := 0
	for pos := 0; pos < len(data); {
		end := len(data)
		if n := bytes.IndexByte(data[pos:], '\n'); n >= 0 {
			end = pos + n + 1
		}
		if line := data[pos:end]; bytes.HasPrefix(line, []byte(yamlSeparator)) {
			rest := bytes.TrimSpace(line[len(yamlSeparator):])
			if len(rest) > 0 && rest[0] != '#' {
				return nil, false
			}
			if pos > start {
				docs = append(docs, data[start:pos:pos])
				start = end
			}
		}
		pos = end
	}
	if last := data[start:len(data):len(data)]; len(last) > 0 {
		if last[len(last)-1] != '\n' {
			last = append(last, '\n')
		}
		docs = append(docs, last)
	}
	return docs, true
}

// yamlSeparator begins the line that separates two YAML documents.
const yamlSeparator = "---"

// readYAMLDocs splits a YAML stream with kubectl's reader.
func readYAMLDocs(data []byte) (docs [][]byte, err error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return docs, err
		}
		docs = append(docs, doc)
	}
}

// appendInputs appends every list of src to the same list of dst.
func appendInputs(dst, src *desired.Inputs) {
	d, s := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem()
	for f := range d.NumField() {
		if d.Field(f).Kind() == reflect.Slice && s.Field(f).Len() > 0 {
			d.Field(f).Set(reflect.AppendSlice(d.Field(f), s.Field(f)))
		}
	}
}

// addObject decodes one object (or a List of them) into in and returns notes
// for what it skipped. known, if not nil, is raw's apiVersion and kind, as
// json.Unmarshal reads them.
func addObject(raw []byte, known *metav1.TypeMeta, in *desired.Inputs) ([]string, error) {
	var tm metav1.TypeMeta
	if known != nil {
		tm = *known
	} else if err := json.Unmarshal(raw, &tm); err != nil {
		return nil, err
	}
	if tm.Kind == "" {
		return nil, errors.New("no kind")
	}
	if strings.HasSuffix(tm.Kind, "List") {
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("%s: %w", tm.Kind, err)
		}
		var notes []string
		for j, item := range list.Items {
			n, err := addObject(item, nil, in)
			if err != nil {
				return nil, fmt.Errorf("%s item %d: %w", tm.Kind, j, err)
			}
			notes = append(notes, n...)
		}
		return notes, nil
	}
	group, _, _ := strings.Cut(tm.APIVersion, "/")
	if !strings.Contains(tm.APIVersion, "/") {
		group = ""
	}
	for _, d := range kindDefs {
		if group == d.resource.Group && tm.Kind == string(d.kind) {
			return nil, d.decode(raw, in)
		}
	}
	var om struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	_ = json.Unmarshal(raw, &om)
	return []string{fmt.Sprintf("skipped %s %s (not a kind ovn-sync reads)", tm.Kind, om.Metadata.Name)}, nil
}

type object interface {
	GetNamespace() string
	SetNamespace(string)
	GetName() string
}

// objectPtr constrains T so that *T is an object: decodeInto allocates T and
// appends *T.
type objectPtr[T any] interface {
	*T
	object
}

var (
	_ object = (*corev1.Pod)(nil)
	_ object = (*kubevirtv1.VirtualMachine)(nil)
	_ object = (*nadv1.NetworkAttachmentDefinition)(nil)
)

// decodeClusterScoped is decodeInto for a kind without namespaces
// (Subnet, Namespace, IP): a namespace in the manifest is dropped.
func decodeClusterScoped[T any, P objectPtr[T]](raw []byte, list *[]P) error {
	p := P(new(T))
	if err := json.Unmarshal(raw, p); err != nil {
		return err
	}
	if p.GetName() == "" {
		return errors.New("metadata.name is empty")
	}
	p.SetNamespace("")
	*list = append(*list, p)
	return nil
}

// manifestPod is what ovn-sync reads of a Pod in a manifest: what the
// informers keep of one (stripPod), each field as strictly typed as in
// corev1.Pod. The rest of the document (containers, volumes, statuses:
// most of a pod) is skipped, not decoded, nor checked: it is not
// ovn-sync's to validate, as the informers' transforms drop it unread.
type manifestPod struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            struct {
		NodeName    string `json:"nodeName"`
		HostNetwork bool   `json:"hostNetwork"`
	} `json:"spec"`
	Status struct {
		Phase corev1.PodPhase `json:"phase"`
	} `json:"status"`
}

// decodePod is decodeInto for a Pod, through manifestPod: the pod is the one
// the informers would store.
func decodePod(raw []byte, list *[]*corev1.Pod) error {
	var lp manifestPod
	if err := json.Unmarshal(raw, &lp); err != nil {
		return err
	}
	p := &corev1.Pod{TypeMeta: lp.TypeMeta, ObjectMeta: leanMeta(lp.Metadata),
		Spec:   corev1.PodSpec{NodeName: lp.Spec.NodeName, HostNetwork: lp.Spec.HostNetwork},
		Status: corev1.PodStatus{Phase: lp.Status.Phase}}
	return appendObject(p, list)
}

func decodeInto[T any, P objectPtr[T]](raw []byte, list *[]P) error {
	p := P(new(T))
	if err := json.Unmarshal(raw, p); err != nil {
		return err
	}
	return appendObject(p, list)
}

// appendObject appends p, named and in a namespace, to list.
func appendObject[P object](p P, list *[]P) error {
	if p.GetName() == "" {
		return errors.New("metadata.name is empty")
	}
	if p.GetNamespace() == "" {
		p.SetNamespace("default") // as kubectl does with no --namespace
	}
	*list = append(*list, p)
	return nil
}

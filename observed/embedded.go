package observed

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/stdr"
	"github.com/ovn-org/libovsdb/database/inmemory"
	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/server"

	"github.com/ovn-sync/ovn-sync/nbdb"
)

// Embedded is libovsdb's in-memory OVSDB server serving the bundled OVN NB
// schema on a unix socket in a temporary directory.
type Embedded struct {
	srv *server.OvsdbServer
	dir string
	// Endpoint is the server's address ("unix:/tmp/.../nb.sock").
	Endpoint string
}

// quietStdr lowers the process-wide stdr verbosity, which libovsdb's
// server raises to 5 in its init: it then logs every row it caches to
// stderr, and the demo wants none of it. Once only: the servers started
// before read the verbosity while they run.
var quietStdr sync.Once

// StartEmbedded starts an empty in-memory NB. Call Close when done.
func StartEmbedded() (*Embedded, error) {
	quietStdr.Do(func() { stdr.SetVerbosity(0) })
	clientModel, err := nbdb.FullDatabaseModel()
	if err != nil {
		return nil, err
	}
	dbModel, errs := model.NewDatabaseModel(nbdb.Schema(), clientModel)
	if len(errs) > 0 {
		return nil, fmt.Errorf("NB schema: %v", errs)
	}
	db := inmemory.NewDatabase(map[string]model.ClientDBModel{clientModel.Name(): clientModel})
	srv, err := server.NewOvsdbServer(db, dbModel)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ovn-sync-nb")
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, "nb.sock")
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve("unix", sock) }()
	for deadline := time.Now().Add(5 * time.Second); !srv.Ready(); {
		select {
		case err := <-errc:
			os.RemoveAll(dir)
			return nil, fmt.Errorf("embedded NB: %w", err)
		default:
		}
		if time.Now().After(deadline) {
			srv.Close()
			os.RemoveAll(dir)
			return nil, fmt.Errorf("embedded NB did not become ready on %s", sock)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return &Embedded{srv: srv, dir: dir, Endpoint: "unix:" + sock}, nil
}

// Close stops the server and removes its socket.
func (e *Embedded) Close() {
	e.srv.Close()
	os.RemoveAll(e.dir)
}

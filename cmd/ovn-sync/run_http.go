package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ovn-sync/ovn-sync/reconcile"
)

// httpOptions are what run serves over HTTP.
type httpOptions struct {
	addr string
	// pprof also serves Go's profiles (net/http/pprof) under /debug/pprof/.
	pprof bool
}

// serveHTTP runs, on o.addr, /metrics, /healthz, /readyz (ready once the
// loop has started and says so) and /plan (the last pass's plan, as
// "ovn-sync plan" prints it; ?o=json as its -o json) until the returned
// function is called.
func serveHTTP(log logr.Logger, o httpOptions, m *reconcile.Metrics, loop *atomic.Pointer[reconcile.Loop]) (func(), error) {
	mux := http.NewServeMux()
	if o.pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.Handle("/metrics", promhttp.HandlerFor(m.Registry(), promhttp.HandlerOpts{Registry: m.Registry()}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		ok, why := false, "starting: reading Kubernetes and connecting to the NB"
		if l := loop.Load(); l != nil {
			ok, why = l.Ready()
		}
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(why))
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("/plan", func(w http.ResponseWriter, r *http.Request) { servePlan(w, r, loop.Load()) })
	l, err := net.Listen("tcp", o.addr)
	if err != nil {
		return nil, err
	}
	log.Info("serving metrics and health", "addr", l.Addr().String())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(err, "metrics server")
		}
	}()
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-done
	}, nil
}

// servePlan writes the last pass's outcome of l: its problems, notices and
// plan as "ovn-sync plan" prints them, or with ?o=json the document of
// "ovn-sync plan -o json".
func servePlan(w http.ResponseWriter, r *http.Request, l *reconcile.Loop) {
	var out reconcile.Outcome
	ok := false
	if l != nil {
		out, ok = l.LastOutcome()
	}
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("no pass yet\n"))
		return
	}
	switch o := r.URL.Query().Get("o"); o {
	case "json":
		w.Header().Set("Content-Type", "application/json")
		_ = out.WriteJSON(w)
	case "", "text":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		out.WriteProblems(w)
		out.WritePlans(w)
	default:
		http.Error(w, fmt.Sprintf("o=%s: want text or json", o), http.StatusBadRequest)
	}
}

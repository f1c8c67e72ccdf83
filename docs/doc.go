// Package docs holds ovn-sync's reference, in Markdown beside this file:
// the design (DESIGN.md) and the pages README.md links to. It has no code.
// Its test checks that every relative link in README.md, docs/*.md and
// bench/RESULTS.md names a file that exists and, with a #fragment into a
// Markdown file, a heading of that file, its anchor made as GitHub makes
// it.
package docs

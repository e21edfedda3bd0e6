// Package heap shapes the memory of the slipway process: where Linux hands out transparent
// huge pages only to memory that asks for them (the "madvise" mode, the default of many
// distributions and of this project's machines), it has the Go heap ask. The Go runtime asks
// for none (since Go 1.21.1): every 4 KiB page of the heap is a page fault of its own on
// first touch. On the 2-core virtual machines slipway is measured on, a page fault cost about
// 12 µs, and a no-op plan of 1,000 nodes took 15,000–16,000 of them: about a quarter of its CPU
// (issue 17). It assumes nothing else of the runtime than that it reuses the pages it freed
// before it maps new ones.
package heap

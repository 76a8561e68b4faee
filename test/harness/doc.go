// Package harness runs kmaint's operator against the test bed's API server
// for tests, and plays the node side around it: daemons that reboot approved
// nodes (the one faked seam) and a watcher that checks the pool budget on
// every node change.
package harness

// Package amtest runs a real Alertmanager for tests, so that kmaint's
// silences are made, extended and expired against the API that production
// uses, outages included (Stop and Restart keep its storage).
//
// The server is the binary of Debian's prometheus-alertmanager package
// (hack/install-test-deps.sh installs it), or the one $KMAINT_ALERTMANAGER
// names. Without one a test skips, or fails when $CI is set.
package amtest

// Package bench measures rolling reboots of hundreds and thousands of
// simulated nodes (in-memory journals, in-process daemons, the operator as
// its own process) and saves the figures under results/.
package bench

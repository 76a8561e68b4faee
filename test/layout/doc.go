// Package layout tests that the repository's folders are its floors: what
// every binary shares (api, then policies, then internal) imports nothing
// above it, and no binary but the operator links the operator's packages.
package layout

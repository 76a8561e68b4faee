// Package scheme builds the scheme every kmaint client needs: the built-in
// types and kmaint's API. It sits beside the API types rather than in
// operator so that the daemon and the kubectl plugin can decode kmaint's
// objects without linking the operator's controllers.
package scheme

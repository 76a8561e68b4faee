package v1alpha1

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
)

// Decoding that one stored object cannot break.
//
// The API server hands back what it stored, whatever the CRD says today: an
// object stored before a bound existed (maxUnavailable: 10000000000 in an
// int32), or through another version of the CRD whose schema allowed other
// types. Decoded strictly, one such object fails the whole list, and an
// informer that cannot list never syncs: the operator would see no pool at
// all. So each kind decodes itself: an object whose body does not fit its Go
// type keeps its metadata (name, UID, labels, generation) and nothing else,
// and says why through Unreadable. Controllers skip such an object and fail
// closed around it; they never write it back: MarshalJSON refuses to, so no
// update or patch computed from it can reach the API server.
//
// client-go's JSON serializer (apimachinery's, through sigs.k8s.io/json)
// calls these methods for single objects, every item of a list and every
// watch event alike. CBOR, off unless a client turns it on, would not.

// Unreadable says why the MaintenancePool's body could not be decoded; nil
// when it could. An unreadable pool holds only its metadata.
func (p *MaintenancePool) Unreadable() error { return unreadableError(p.unreadable) }

// UnmarshalJSON decodes a MaintenancePool, or only its metadata when the
// rest does not fit; see Unreadable.
func (p *MaintenancePool) UnmarshalJSON(data []byte) error {
	type plain MaintenancePool
	return decodeLeniently(data, (*plain)(p), &p.TypeMeta, &p.ObjectMeta, &p.unreadable)
}

// MarshalJSON refuses an unreadable MaintenancePool: written back, its
// missing spec would replace the stored one.
func (p MaintenancePool) MarshalJSON() ([]byte, error) {
	type plain MaintenancePool
	return marshalReadable("MaintenancePool", p.Name, p.unreadable, plain(p))
}

// Unreadable says why the RebootPolicy's body could not be decoded; nil when
// it could. An unreadable policy holds only its metadata.
func (p *RebootPolicy) Unreadable() error { return unreadableError(p.unreadable) }

// UnmarshalJSON decodes a RebootPolicy, or only its metadata when the rest
// does not fit; see Unreadable.
func (p *RebootPolicy) UnmarshalJSON(data []byte) error {
	type plain RebootPolicy
	return decodeLeniently(data, (*plain)(p), &p.TypeMeta, &p.ObjectMeta, &p.unreadable)
}

// MarshalJSON refuses an unreadable RebootPolicy: written back, its missing
// spec would replace the stored one.
func (p RebootPolicy) MarshalJSON() ([]byte, error) {
	type plain RebootPolicy
	return marshalReadable("RebootPolicy", p.Name, p.unreadable, plain(p))
}

// Unreadable says why the NodeMaintenance's body could not be decoded; nil
// when it could. An unreadable NodeMaintenance holds only its metadata: its
// node, phase and source are unknown.
func (nm *NodeMaintenance) Unreadable() error { return unreadableError(nm.unreadable) }

// UnmarshalJSON decodes a NodeMaintenance, or only its metadata when the
// rest does not fit; see Unreadable.
func (nm *NodeMaintenance) UnmarshalJSON(data []byte) error {
	type plain NodeMaintenance
	return decodeLeniently(data, (*plain)(nm), &nm.TypeMeta, &nm.ObjectMeta, &nm.unreadable)
}

// MarshalJSON refuses an unreadable NodeMaintenance: written back, its
// missing spec would replace the stored one.
func (nm NodeMaintenance) MarshalJSON() ([]byte, error) {
	type plain NodeMaintenance
	return marshalReadable("NodeMaintenance", nm.Name, nm.unreadable, plain(nm))
}

// decodeLeniently decodes data into obj, a kind's plain type (so that the
// kind's own UnmarshalJSON is not called again), and clears unreadable; or,
// when the body does not fit, keeps only the metadata, in tm and om, and
// why in unreadable.
func decodeLeniently[T any](data []byte, obj *T, tm *metav1.TypeMeta, om *metav1.ObjectMeta, unreadable *string) error {
	var zero T
	*obj = zero
	err := kjson.UnmarshalCaseSensitivePreserveInts(data, obj)
	if err == nil {
		return nil
	}
	*obj = zero
	*unreadable, err = metadataOnly(data, tm, om, err)
	return err
}

// marshalReadable encodes obj, a kind's plain type, unless the object is
// unreadable: written back, its missing spec would replace the stored one.
func marshalReadable[T any](kind, name, unreadable string, obj T) ([]byte, error) {
	if unreadable != "" {
		return nil, fmt.Errorf("%s %s cannot be read (%s), so it is never written back: what the API server stores would be lost", kind, name, unreadable)
	}
	return json.Marshal(obj)
}

// metadataOnly decodes the type and object metadata of an object whose body
// failed to decode with bodyErr, and returns what to keep as the reason it
// is unreadable. Data whose metadata cannot be decoded either is no stored
// object (the API server checks metadata on every write): its error is
// returned as such.
func metadataOnly(data []byte, tm *metav1.TypeMeta, om *metav1.ObjectMeta, bodyErr error) (string, error) {
	var head struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ObjectMeta `json:"metadata"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &head); err != nil {
		return "", errors.Join(bodyErr, err)
	}
	*tm, *om = head.TypeMeta, head.Metadata
	return describe(bodyErr), nil
}

// typeError is the shape of the error encoding/json (and its fork in
// sigs.k8s.io/json) gives for a value of the wrong type, with the Go struct
// around the field: "json: cannot unmarshal number 10000000000 into Go
// struct field MaintenancePoolSpec.spec.maxUnavailable of type int32".
var typeError = regexp.MustCompile(`^json: cannot unmarshal (.+) into Go struct field [^ .]+\.(\S+) of type (\S+)$`)

// describe says what does not fit in the API's words: the field's path and
// what it holds, without the Go names a person cannot look up.
func describe(err error) string {
	m := typeError.FindStringSubmatch(err.Error())
	if m == nil {
		return err.Error()
	}
	return fmt.Sprintf("%s: cannot read %s as %s", m[2], m[1], m[3])
}

func unreadableError(why string) error {
	if why == "" {
		return nil
	}
	return errors.New(why)
}

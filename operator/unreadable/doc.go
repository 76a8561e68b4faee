// Package unreadable reports kmaint objects whose stored body does not fit
// the API's Go types (see v1alpha1.MaintenancePool.Unreadable): a Warning
// event and an Unreadable condition on the object, naming the field, and
// the condition's removal once the object reads again. The controllers that
// use such an object fail closed around it; this package only says so where
// a person looks.
package unreadable

package cmd

// Explain lets the tests check how errors are explained to people.
var Explain = explain

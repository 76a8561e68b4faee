package history

// NewWatching is newWatching, for the tests of package history_test.
var NewWatching = newWatching

// Command printroot prints repo.Root, for repo's test.
package main

import (
	"fmt"

	"github.com/kmaint/kmaint/test/repo"
)

func main() { fmt.Println(repo.Root()) }

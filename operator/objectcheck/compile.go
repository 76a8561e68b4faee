package objectcheck

import (
	"errors"
	"fmt"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"

	"github.com/kmaint/kmaint/api/v1alpha1"
)

// The variables an expression sees.
const (
	// NodeVar is the node, as an object (the Node's JSON).
	NodeVar = "node"
	// PodsVar is the list of pods, each an object (the Pod's JSON).
	PodsVar = "pods"
)

// kind is which objects a check reads, and so which variables it has.
type kind int

const (
	kindNode kind = iota
	kindPodsOnNode
	kindPods
)

func kindOf(o v1alpha1.CheckObjects) kind {
	switch {
	case o.Pods != nil:
		return kindPods
	case o.PodsOnNode != nil:
		return kindPodsOnNode
	}
	return kindNode
}

// Limits bound what an expression may cost, in CEL's cost units.
type Limits struct {
	// Estimated bounds the cost CEL estimates at compile time, with pods
	// counted as at most MaxPods and any other list, map or string of an
	// object as at most nestedSize.
	Estimated uint64
	// Runtime bounds the cost of one evaluation, counted as it runs.
	Runtime uint64
	// MaxPods bounds the pods one evaluation reads.
	MaxPods int
}

// DefaultCostLimit is Kubernetes' own: what a ValidatingAdmissionPolicy's
// expression may cost per call. It bounds both the estimate and the cost
// as it runs, so that an expression refused as it runs is rare.
const DefaultCostLimit = celconfig.PerCallLimit

// nestedSize is what the estimate takes for the size of a list, map or
// string inside an object (containers, labels, conditions): the objects are
// dynamic, so CEL cannot know, and with no bound it would take the largest
// integer and refuse every expression that iterates over one. The runtime
// limit is what holds an object larger than that.
const nestedSize = 64

// maxPrograms bounds the programs kept; past it the cache starts afresh
// (checks are few, so it is reached only by a stream of edited ones).
const maxPrograms = 512

// Compiler compiles expressions once per kind and text. It is safe for
// concurrent use; the gate and aftercare share one.
type Compiler struct {
	limits Limits
	envs   map[kind]*cel.Env

	mu       sync.Mutex
	programs map[programKey]*Program
}

type programKey struct {
	kind kind
	expr string
}

// Program is a compiled expression, or why it cannot be one.
type Program struct {
	kind kind
	prog cel.Program
	err  *Error
}

// Err is why the expression cannot be evaluated; nil when it can.
func (p *Program) Err() error {
	if p.err == nil {
		return nil
	}
	return p.err
}

// NewCompiler returns a Compiler with these limits: DefaultCostLimit and
// v1alpha1.MaxObjectCheckPods where zero.
func NewCompiler(limits Limits) (*Compiler, error) {
	if limits.Estimated == 0 {
		limits.Estimated = DefaultCostLimit
	}
	if limits.Runtime == 0 {
		limits.Runtime = DefaultCostLimit
	}
	if limits.MaxPods == 0 {
		limits.MaxPods = v1alpha1.MaxObjectCheckPods
	}
	base := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	vars := map[kind][]cel.EnvOption{
		kindNode:       {cel.Variable(NodeVar, cel.DynType)},
		kindPodsOnNode: {cel.Variable(NodeVar, cel.DynType), cel.Variable(PodsVar, cel.ListType(cel.DynType))},
		kindPods:       {cel.Variable(PodsVar, cel.ListType(cel.DynType))},
	}
	c := &Compiler{limits: limits, envs: map[kind]*cel.Env{}, programs: map[programKey]*Program{}}
	for k, opts := range vars {
		set, err := base.Extend(environment.VersionedOptions{IntroducedVersion: environment.DefaultCompatibilityVersion(), EnvOptions: opts},
			environment.StrictCostOpt)
		if err != nil {
			return nil, fmt.Errorf("object check environment: %w", err)
		}
		// The stored-expressions environment: one that a newer kmaint
		// compiles the same, as the API server does for what it stored.
		if c.envs[k], err = set.Env(environment.StoredExpressions); err != nil {
			return nil, fmt.Errorf("object check environment: %w", err)
		}
	}
	return c, nil
}

// Compile returns the program of a check, compiled at its first use.
func (c *Compiler) Compile(o v1alpha1.CheckObjects, expr string) *Program {
	key := programKey{kind: kindOf(o), expr: expr}
	c.mu.Lock()
	p, ok := c.programs[key]
	c.mu.Unlock()
	if ok {
		return p
	}
	p = c.compile(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.programs) >= maxPrograms {
		c.programs = map[programKey]*Program{}
	}
	c.programs[key] = p
	return p
}

func (c *Compiler) compile(key programKey) *Program {
	p := &Program{kind: key.kind}
	env := c.envs[key.kind]
	ast, issues := env.Compile(key.expr)
	switch {
	case issues != nil && issues.Err() != nil:
		p.err = &Error{Reason: v1alpha1.InvalidObjectCheckReason, Msg: "the expression does not compile: " + issues.String()}
		return p
	case !ast.OutputType().IsExactType(cel.BoolType) && !ast.OutputType().IsExactType(cel.DynType):
		p.err = &Error{Reason: v1alpha1.InvalidObjectCheckReason, Msg: fmt.Sprintf("the expression is a %s, not a bool", ast.OutputType())}
		return p
	}
	est, err := env.EstimateCost(ast, &library.CostEstimator{SizeEstimator: sizes{maxPods: uint64(c.limits.MaxPods)}})
	switch {
	case err != nil:
		p.err = &Error{Reason: v1alpha1.InvalidObjectCheckReason, Msg: "the expression's cost cannot be estimated", Err: err}
		return p
	case est.Max > c.limits.Estimated:
		p.err = &Error{Reason: v1alpha1.ObjectCheckCostExceededReason,
			Msg: fmt.Sprintf("the expression may cost up to %d, more than the limit of %d (with pods counted as at most %d and each list, map or string in an object as at most %d items)",
				est.Max, c.limits.Estimated, c.limits.MaxPods, nestedSize)}
		return p
	}
	prog, err := env.Program(ast, cel.CostLimit(c.limits.Runtime), cel.InterruptCheckFrequency(celconfig.CheckFrequency))
	if err != nil {
		p.err = &Error{Reason: v1alpha1.InvalidObjectCheckReason, Msg: "the expression cannot be made a program", Err: err}
		return p
	}
	p.prog = prog
	return p
}

// sizes bounds the sizes CEL cannot know (see nestedSize). They are only
// the estimate's: an expression whose objects are larger is stopped by the
// runtime limit, and its check holds.
type sizes struct{ maxPods uint64 }

func (s sizes) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	path := n.Path()
	switch {
	case len(path) == 1 && path[0] == PodsVar:
		return &checker.SizeEstimate{Min: 0, Max: s.maxPods}
	}
	// Anything else CEL cannot size: a field of an object, or a value a
	// function made of one (an optional's orValue, a split).
	return &checker.SizeEstimate{Min: 0, Max: nestedSize}
}

func (sizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// Error is why an object check cannot say true or false. Its Reason is the
// condition's reason (InvalidObjectCheck, ObjectCheckCostExceeded,
// ObjectCheckFailed, ObjectCheckForbidden); the check holds (a blocking
// check) or passes no node (a health check).
type Error struct {
	Reason string
	Msg    string
	Err    error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %v", e.Msg, e.Err)
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// ReasonOf returns the reason of an object check's error, and
// ObjectCheckFailed for any other error.
func ReasonOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return v1alpha1.ObjectCheckFailedReason
}

package image

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Instruction is one Dockerfile instruction, its continuation lines joined.
type Instruction struct {
	// Command is the instruction's keyword in upper case: FROM, RUN, ...
	Command string
	// Args is the rest of the instruction, as written.
	Args string
}

// Stage is a build stage: its FROM line's image and name, and what follows.
type Stage struct {
	From, Name   string
	Instructions []Instruction
}

// Dockerfile is a parsed Dockerfile: the global ARGs before the first FROM,
// and the stages in order.
type Dockerfile struct {
	Args   map[string]string
	Stages []Stage
}

// ParseDockerfile reads the instructions this test needs of a Dockerfile:
// no heredocs, no parser directives; comments and blank lines dropped.
func ParseDockerfile(file string) (*Dockerfile, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	df := &Dockerfile{Args: map[string]string{}}
	var cur strings.Builder
	flush := func() error {
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		if line == "" {
			return nil
		}
		cmd, args, _ := strings.Cut(line, " ")
		in := Instruction{Command: strings.ToUpper(cmd), Args: strings.TrimSpace(args)}
		switch {
		case in.Command == "FROM":
			f := strings.Fields(in.Args)
			st := Stage{From: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.Name = f[2]
			}
			df.Stages = append(df.Stages, st)
		case len(df.Stages) == 0:
			if in.Command != "ARG" {
				return fmt.Errorf("%s before the first FROM", in.Command)
			}
			k, v, _ := strings.Cut(in.Args, "=")
			df.Args[k] = v
		default:
			st := &df.Stages[len(df.Stages)-1]
			st.Instructions = append(st.Instructions, in)
		}
		return nil
	}
	for _, raw := range strings.Split(string(b), "\n") {
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSuffix(line, "\\") + " ")
			continue
		}
		cur.WriteString(line)
		if err := flush(); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
	}
	if err := flush(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return df, nil
}

// Final is the last stage, the image the Dockerfile builds.
func (d *Dockerfile) Final() Stage { return d.Stages[len(d.Stages)-1] }

// All returns the args of every instruction of the stage with command.
func (s Stage) All(command string) []string {
	var out []string
	for _, in := range s.Instructions {
		if in.Command == command {
			out = append(out, in.Args)
		}
	}
	return out
}

// labelPair is one key=value of a LABEL instruction, the value quoted or
// not.
var labelPair = regexp.MustCompile(`([A-Za-z0-9._/-]+)=("(?:[^"\\]|\\.)*"|\S+)`)

// Labels returns the labels the stage's LABEL instructions set, with
// ${NAME} replaced by vars[NAME].
func (s Stage) Labels(vars map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for _, args := range s.All("LABEL") {
		for _, m := range labelPair.FindAllStringSubmatch(args, -1) {
			v := m[2]
			if strings.HasPrefix(v, `"`) {
				if err := json.Unmarshal([]byte(v), &v); err != nil {
					return nil, fmt.Errorf("LABEL %s: %w", m[1], err)
				}
			}
			out[m[1]] = os.Expand(v, func(name string) string { return vars[name] })
		}
	}
	return out, nil
}

// Exec returns the JSON (exec) form of an ENTRYPOINT or CMD.
func Exec(args string) ([]string, error) {
	var out []string
	if err := json.Unmarshal([]byte(args), &out); err != nil {
		return nil, fmt.Errorf("not the exec form %s: %w", args, err)
	}
	return out, nil
}

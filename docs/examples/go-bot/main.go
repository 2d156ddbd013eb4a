// A starter bot in Go for the arena's line protocol (docs/bots.md, "Bots that read and write lines").
// Standard library only. It reads one JSON object a line on stdin and answers each "turn" line with a
// random legal action and a short note. One process plays every match it is given ("matches": "many"):
// the lines of several matches and seats interleave, so it keeps what it knows per match and seat, and
// every reply names the match, seat and ply it answers.
//
//	go build -o bot docs/examples/go-bot/main.go
//	arena play --stdio ./bot --vs random --game shangrila-3p
//	arena bot check --stdio ./bot
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
)

// message is every line the adapter writes; each type fills its own fields.
type message struct {
	Type     string          `json:"type"` // start, turn, refused, end
	Match    string          `json:"match"`
	Seat     int             `json:"seat"`
	Ply      int             `json:"ply"`
	Game     string          `json:"game"`
	Legal    []string        `json:"legal"`
	MoveMs   int             `json:"move_ms"`
	BankMs   int             `json:"bank_ms"`
	Since    []string        `json:"since"`
	Refusals []refusal       `json:"refusals"`
	View     json.RawMessage `json:"view"` // the seat's view, as in docs/schemas
	Reason   string          `json:"reason"`
	Code     string          `json:"code"`
	Scores   []int           `json:"scores"`
	Ranks    []int           `json:"ranks"`
}

type refusal struct {
	Action string `json:"action"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

type reply struct {
	Match  string `json:"match"`
	Seat   int    `json:"seat"`
	Ply    int    `json:"ply"`
	Action string `json:"action"`
	Note   string `json:"note,omitempty"`
}

type seatKey struct {
	match string
	seat  int
}

func main() {
	in := bufio.NewReader(os.Stdin)
	out := json.NewEncoder(os.Stdout) // one object a line; os.Stdout is unbuffered
	if err := out.Encode(map[string]any{"type": "hello", "protocol": 1, "matches": "many"}); err != nil {
		os.Exit(1)
	}
	seen := map[seatKey]int{} // actions played so far in each match, as this seat has been told
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			var m message
			if json.Unmarshal(line, &m) != nil {
				fmt.Fprintf(os.Stderr, "go-bot: cannot read %q\n", line)
				continue
			}
			key := seatKey{m.Match, m.Seat}
			switch m.Type {
			case "start":
				seen[key] = 0
			case "turn":
				seen[key] += len(m.Since)
				for _, r := range m.Refusals {
					fmt.Fprintf(os.Stderr, "go-bot: %q was refused (%s): %s\n", r.Action, r.Code, r.Reason)
				}
				pick := rand.Intn(len(m.Legal))
				note := fmt.Sprintf("random %d of %d after %d plies", pick+1, len(m.Legal), seen[key])
				if err := out.Encode(reply{m.Match, m.Seat, m.Ply, m.Legal[pick], note}); err != nil {
					os.Exit(1)
				}
			case "refused":
				fmt.Fprintf(os.Stderr, "go-bot: refused (%s): %s\n", m.Code, m.Reason)
			case "end":
				fmt.Fprintf(os.Stderr, "go-bot: %s ended (%s), scores %v\n", m.Match, m.Reason, m.Scores)
				delete(seen, key)
			}
		}
		if err != nil { // stdin closed: the arena is done with this bot
			return
		}
	}
}

// Package nodename holds the rule node names follow. It is a leaf (it imports
// only the standard library) so that ent's schema, the nodes domain package
// and the tunnel's join handler can all check the one rule without an import
// cycle: internal/nodes imports ent, and ent's runtime imports ent/schema.
package nodename

import "regexp"

// Pattern is the node-name rule: 1 to 63 letters, digits, '.', '_' or '-',
// starting and ending with a letter or digit, so a name works as a host
// name label and in a command line without quoting.
var Pattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$`)

// Valid reports whether name follows the node-name rule.
func Valid(name string) bool { return Pattern.MatchString(name) }

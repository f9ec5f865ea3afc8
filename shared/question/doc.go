// Package question owns the schema of a question request an agent asks
// the human through the AskUserQuestion tool (several questions answered
// together), and the validation of an answer against it.
//
// A request is Claude Code's AskUserQuestion shape
//
//	{"questions":[{"question":"...","header":"...","options":[{"label":"...","description":"..."}],"multiSelect":false}]}
//
// extended with, per question, "id" (default q1, q2, … by position),
// "kind" (single, multiple, confirm, text, form; default single, or
// multiple when multiSelect is true) and, for forms, "fields" (name, type
// string|number|integer|boolean, required, enum, label).
//
// An answer maps question ids to values: single → one option label;
// multiple → an array of distinct option labels (at least one); confirm →
// true or false; text → a string; form → an object of field values.
//
// The package is pure: no store, no transport, no imports of the
// lifecycle. It never decides what happens to an answer; actionflow does.
package question

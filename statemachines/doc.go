// Package statemachines embeds the ASL definitions, the single source of
// truth of orchestration: AWS Step Functions loads the same file through the
// CDK stack (with DefinitionSubstitutions for the ${...} placeholders), and
// the embedded engine interprets it on one machine. Functions names the
// functions the current definition invokes; Retired names those only
// earlier revisions' definitions invoke (the project step, which the record
// step took over), still served so their executions run to their end.
package statemachines

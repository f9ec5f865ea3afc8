// Package statemachines embeds the ASL definitions, the single source of
// truth of orchestration: AWS Step Functions loads the same file through the
// CDK stack (with DefinitionSubstitutions for the ${...} placeholders), and
// the embedded engine interprets it on one machine.
package statemachines

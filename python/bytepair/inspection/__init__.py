"""Looking inside a tokenizer and at what texts cost: `report` (summary,
merge traces, bytes/token statistics), `show` (a text coloured by token),
`curve` (compression against vocabulary size). Their command lines are in
`bytepair.cli.inspection`; matplotlib is imported only to plot."""

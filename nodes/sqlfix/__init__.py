"""SQLFixAgent's agents: the SQLTool, the SQLReviewer, the QueryCrafter and the SQLRefiner."""

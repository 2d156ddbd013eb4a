"""The referee: rules engines (``referee.games``) and, in later issues, the match runner and gRPC server."""

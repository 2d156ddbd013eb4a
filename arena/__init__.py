"""The arena's control plane: queue, registry, ladder, scheduler, transcripts and the ``arena`` CLI."""

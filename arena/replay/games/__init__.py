"""The replay drawings of the registered games, one folder each: the Python that fills the page data and
the page's script part (``drawing.js``). Each game's registration (``referee.games``) names its drawing;
``arena.replay`` finds it only from there (``arena.replay.drawing.drawing_for``)."""

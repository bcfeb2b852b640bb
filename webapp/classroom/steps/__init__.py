"""The lesson taught live, one module per step kind the console sends: a part of a lesson page on every screen
(`parts`), its demonstration run once for the whole class (`demos`), a page's exercise asked as a multiple-choice
question (`exercises`), a training comparison the class predicts before its result (`comparisons`); and what a screen
shows of a step, rendered once per language in each web process (`screens`). Each kind's fields are checked by one
function that the console's socket and a lesson plan's check both call (docs/classroom-socket.md)."""

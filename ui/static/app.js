// levers9 dashboard script: only the live parts (log following and the
// cost estimate). Every page works without it.
"use strict";

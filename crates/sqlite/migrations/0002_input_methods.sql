-- 0002: which input requests the requestor of a task can answer (a JSON array of method
-- names such as "elicitation/create"), recorded at creation from its declared
-- capabilities, so that work asking for input it can never get fails at once.

ALTER TABLE tasks ADD COLUMN input_methods TEXT NOT NULL DEFAULT '[]';

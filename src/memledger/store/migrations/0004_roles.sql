-- memledger schema 4: who spoke a turn (user, assistant, tool; NULL between peers).

ALTER TABLE events ADD COLUMN role TEXT;

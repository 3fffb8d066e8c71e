"""The adversarial suite kept in the project (issue 17): hostile scenarios, traces and overrides
handed to the real CLI inside a memory- and time-limited child process."""

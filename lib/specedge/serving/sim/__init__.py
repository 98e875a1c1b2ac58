"""The simulated serving system: the event engine, the client and server processes, the twin, the replay of a
real run, and centralized serving."""

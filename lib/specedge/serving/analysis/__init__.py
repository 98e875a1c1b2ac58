"""Analysis of serving logs, the real run's and the twin's alike: metrics, capacity searches, per-round series,
client mixes, and the twin's validation against real runs."""

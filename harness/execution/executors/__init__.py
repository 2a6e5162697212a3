"""Where questions run: this process, worker processes, Ray actors (`dispatch` picks one), and
the watchdog and event-loop helpers they share."""

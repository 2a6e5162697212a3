"""Where questions run: this process, worker processes, Ray actors, each an `Executor`
(`protocol`: a typed plan and a commit callback; `dispatch` picks one), the worker process
machinery (`processes`), and the watchdog and event-loop helpers they share."""

"""The timeout of every HTTP request a test sends to a server of its own on loopback.

httpx's default is 5 s; a loopback server answers in milliseconds on a quiet machine, but under
load (the suite beside other work, `stress --cpu 6` on 2 cores) one request has taken longer,
and the test failed on a timeout though the behaviour it checks was right. A request that
really hangs still fails the test, after this long."""

LOOPBACK_TIMEOUT_S = 60.0

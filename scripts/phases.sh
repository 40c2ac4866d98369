# The test phases, named once for scripts/test.sh and scripts/sanitize.sh (sourced, not run).
# Each is a `swift test --filter` pattern.
#
# heavy:  the oracle-heavy suites (thousands of systemd-analyze and tomllib comparisons, which
#         keep both cores busy), and `tocsin check` of a 400,000-key file (a core for tens of
#         seconds), so they run first, on their own. `tocsin next` against systemd-analyze
#         (NextCommandTests) is of this kind: its oracle runs block test threads.
# timing: the suites whose assertions are latency promises (a Fired signal within 50 ms of due,
#         a player reaped and a stream silenced within 100 ms of acknowledge, a firing every
#         second on time while a hostile call or reload runs). Beside the other
#         suites' start-up (57 suites spawning buses, Xvfb, dunst, PulseAudio and Python clients
#         at once, each with its own SQLite fsyncs) a firing came 62 ms late on the CI machine,
#         which measured the machine, not Tocsin; they get the cores to themselves. The daemon
#         harness's binary mode (DaemonModesTests, DaemonInProcessTests) is here too: on the real
#         clock its calls must all be answered before a due time 6 s ahead (beside the rest, five
#         gdbus calls took longer in CI); and "SIGTERM stops the
#         daemon within 2 s" (CrashRecoveryTests), a 5 ms stop that took 2.2 s beside the rest.
# fleet:  a real mosquitto, two daemons per test, "stops both within a second" and an idle
#         measurement; beside the other suites they missed deadlines under load.
# faults: mounts, kill -9 and many Python clients, and the compressed two days (thousands of
#         deliveries in 3 s); the Swift client's suites (a daemon per test, 12,000 scheduled in
#         one); the backend conformance cases against real servers (PulseAudio, a notification
#         daemon, mosquitto, a D-Bus service, each started per row); after the others, so they
#         slow no timing assertion (beside the rest under
#         AddressSanitizer, LoopExecutorTests' "wakes at once" waited 13.5 s).
# load:   the load and burst suites saturate both cores on purpose, so they run last, alone.
# Everything else runs together in one phase (`--skip` all of the above).
phase_heavy='TocsinTimeTests|TocsinConfigTests|HostileConfigTests|NextCommandTests|NextCommandDSTPolicyTests'
phase_timing='IntegrationTests\.GatewayTests|DaemonModesTests|DaemonInProcessTests|CrashRecoveryTests|IntegrationTests\.SoundAlarmTests|SoundBackendTests\.PlayerLifecycleTests|HostileReloadTests'
phase_fleet='FleetTests|FleetScheduleTests|FleetIdleTests'
phase_faults='ServedBackendConformanceTests|FaultKillTests|FaultStorageTests|SecurityTests|DayOfFiringsTests|TocsinClientTests'
phase_load='LoadTests|FaultBurstTests|FaultFiringBurstTests|FaultSignalQueueTests|HostileStormTests'
phase_rest_skip="$phase_heavy|$phase_timing|$phase_fleet|$phase_faults|$phase_load"

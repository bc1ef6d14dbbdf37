// The daemon's long-running parts as swift-service-lifecycle services. `tidesync run` puts
// them in one `ServiceGroup` in this order: the control socket, the supervisor (every
// domain), the service-manager reports. SIGTERM or SIGINT starts a graceful shutdown, which
// runs in reverse order: systemd hears STOPPING=1 first, the domains finish their running
// transfers, and the socket answers `tidesync status` until the domains are done.
import Control
import Foundation
import ServiceLifecycle

/// The control socket: open from the start, closed once every later service has shut down.
public struct ControlSocketService: Service {
    let server: ControlServer

    public init(server: ControlServer) {
        self.server = server
    }

    public func run() async throws {
        try? await gracefulShutdown()
        server.stop()
    }
}

/// Tells the service manager (systemd, `NOTIFY_SOCKET`) READY=1 once every domain has
/// finished its first scan, a STATUS= line when it changes (at most one a second), and
/// STOPPING=1 when shutdown begins. It looks only when the supervisor signals a change: an
/// idle daemon sends nothing and wakes for nothing.
public struct ServiceManagerReports: Service {
    let supervisor: Supervisor
    let notifier: ServiceNotifier

    public init(supervisor: Supervisor, notifier: ServiceNotifier) {
        self.supervisor = supervisor
        self.notifier = notifier
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown { await report() }
        _ = notifier.send("STOPPING=1")
    }

    private func report() async {
        guard notifier.socketName != nil else {
            try? await gracefulShutdown()
            return
        }
        var announcer = ServiceAnnouncer()
        for await _ in supervisor.statusChanges.stream() {
            await announce(&announcer)
        }
    }

    /// Sends what is new until the service manager knows it all (waiting out the rate limit
    /// or a failed send's retry delay; changes meanwhile are included).
    private func announce(_ announcer: inout ServiceAnnouncer) async {
        while !Task.isCancelled {
            let domains = supervisor.domains.map { (name: $0.domain.name, snapshot: $0.monitor.snapshot()) }
            switch announcer.next(for: domains, now: .now) {
            case .nothing:
                return
            case .wait(let instant):
                try? await Task.sleep(until: instant, clock: .continuous)
            case .send(let announcement):
                announcer.sent(announcement, delivered: notifier.send(announcement.text), at: .now)
            }
        }
    }
}

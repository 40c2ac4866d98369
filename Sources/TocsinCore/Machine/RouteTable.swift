import TocsinSystem
/// The distinct `backends` lists that notifications name, interned: a million notifications
/// routed to three backend sets hold three lists, and each entry keeps a 4-byte row. What firing
/// needs of a route (its targets, whether and how it rings) is worked out once per route and
/// backend set, on a config change, not once per firing.
struct RouteTable: Sendable {
    struct ResolvedRoute: Sendable {
        var targets: [String] = []
        /// The ring policy of the first alarm backend among the targets.
        var ring: RingPolicy?
        /// Where each ring goes: the alarm backends among the targets, and those that follow
        /// their rings (popups), in the route's order. Empty when nothing rings.
        var ringers: [String] = []
    }

    private var routes: [[String]] = []
    private var rows: [[String]: Int32] = [:]
    private var resolvedRoutes: [ResolvedRoute] = []
    /// Row -1: every backend except alarms.
    private(set) var defaultRoute = ResolvedRoute()

    /// After the backend set changed: ring policies may have moved between names.
    mutating func refresh(backends: [BackendInfo]) {
        defaultRoute = Self.resolve(backends.filter { $0.ringPolicy == nil }.map(\.name), backends)
        resolvedRoutes = routes.map { Self.resolve($0, backends) }
    }

    /// The row of `names`, interning it on first sight; nil names: the default route (-1).
    mutating func row(for names: [String]?, backends: [BackendInfo]) -> Int32 {
        guard let names else { return -1 }
        if let r = rows[names] { return r }
        let r = Int32(routes.count)
        routes.append(names)
        resolvedRoutes.append(Self.resolve(names, backends))
        rows[names] = r
        return r
    }

    func resolved(_ row: Int32) -> ResolvedRoute { row < 0 ? defaultRoute : resolvedRoutes[Int(row)] }

    /// The list as the notification named it; nil for the default route.
    func names(_ row: Int32) -> [String]? { row < 0 ? nil : routes[Int(row)] }

    private static func resolve(_ names: [String], _ backends: [BackendInfo]) -> ResolvedRoute {
        var r = ResolvedRoute(targets: names)
        var followers = false
        for name in names {
            guard let info = backends.first(where: { $0.name == name }) else { continue }
            if let policy = info.ringPolicy {
                if r.ring == nil { r.ring = policy }
                r.ringers.append(name)
            } else if info.followsRings {
                r.ringers.append(name)
                followers = true
            }
        }
        if r.ring == nil, followers { r.ringers = [] }
        return r
    }
}

extension NotificationFields {
    /// The bounds of the fields `SpecLimits` did not cover before issue 17's sweep: the short
    /// strings (icon, category, sound, action ids and labels) and the backend list. Without
    /// them one `Schedule` could store megabytes a popup server then gets on every firing, or
    /// name one backend a hundred thousand times and have each firing delivered that often.
    static func sizeIssues<R: FieldReader>(_ spec: NotificationSpec, _ r: R, limits: SpecLimits) -> [FieldIssue] {
        var issues: [FieldIssue] = []
        func check(_ name: String, _ value: String?) {
            guard let value, value.utf8.count > limits.maxShortStringBytes else { return }
            issues.append(FieldIssue(field: name, location: r.valueLocation(of: name),
                                     message: "'\(name)' is \(value.utf8.count) bytes; the limit is \(limits.maxShortStringBytes)"))
        }
        check("icon", spec.icon)
        check("category", spec.category)
        check("sound", spec.sound)
        for a in spec.actions where a.id.utf8.count > limits.maxShortStringBytes || a.label.utf8.count > limits.maxShortStringBytes {
            issues.append(FieldIssue(field: "actions", location: r.valueLocation(of: "actions"),
                                     message: "action '\(a.id.prefix(64))' has an id of \(a.id.utf8.count) and a label of \(a.label.utf8.count) bytes; the limit is \(limits.maxShortStringBytes) each"))
            break
        }
        if let names = spec.backends {
            if names.isEmpty {
                // Not "every backend" (that is leaving the key out) and not "history only": an
                // empty list routed each firing to nothing, without a word.
                issues.append(FieldIssue(field: "backends", location: r.valueLocation(of: "backends"),
                                         message: "'backends' in \(r.context) is empty, so it would deliver to nothing; name at least one backend, or leave 'backends' out for the default ones"))
            } else if names.count > limits.maxBackends {
                issues.append(FieldIssue(field: "backends", location: r.valueLocation(of: "backends"),
                                         message: "'backends' has \(names.count) entries; the limit is \(limits.maxBackends)"))
            } else {
                var seen = Set<String>()
                for (i, name) in names.enumerated() where !seen.insert(name).inserted {
                    let location = r.elementLocation(of: "backends", at: i)
                    issues.append(FieldIssue(field: "backends", location: location, message: "'backends' names '\(name)' twice"))
                    break
                }
            }
        }
        return issues
    }
}

/// Backend names' rules, in one place for every surface (the config file, `Schedule`, `[quiet]`,
/// `[fleet]`), so a name refused or suggested in one is refused or suggested the same way in all.
public enum BackendNames: Sendable {
    /// The one wording of "no backend of that name", for the config file (`[[notification]]`,
    /// `[quiet]`, `[fleet]`) and `Schedule`: the name as given (capped), where it was written, and
    /// the closest of `known`, else `hint`.
    public static func unknown(_ name: String, in place: String? = nil, among known: [String],
                                      otherwise hint: String? = nil) -> String {
        var message = "unknown backend '\(Echo.capped(name))'" + (place.map { " in \($0)" } ?? "")
        if let s = Suggestion.closest(to: name, among: known) { message += "; did you mean '\(s)'?" }
        else if let hint { message += "; \(hint)" }
        return message
    }

    /// Why `name` cannot name a backend (`[backend.NAME]`), or nil.
    public static func validate(_ name: String) -> String? {
        let ok = !name.isEmpty && name.utf8.count <= 64 && name.unicodeScalars.allSatisfy {
            ($0 >= "a" && $0 <= "z") || ($0 >= "A" && $0 <= "Z") || ($0 >= "0" && $0 <= "9") || $0 == "-" || $0 == "_"
        }
        return ok ? nil : "backend name '\(name)' must be 1-64 letters, digits, '-' or '_'"
    }
}

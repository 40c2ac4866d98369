extension Gateway {
    /// The release, in one place: `tocsin --version`, the D-Bus `Version` property and the Debian
    /// package's version all come from here. scripts/package.sh reads this line with sed, so it
    /// stays a single string literal on one line (VersionTests checks that the three agree).
    public static let version = "0.1.0"
}

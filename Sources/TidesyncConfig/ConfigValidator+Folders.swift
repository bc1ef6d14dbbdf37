/// Checks across domains: unique names, and folders that do not overlap.
extension ConfigValidator {
    /// Names must differ, and also their password variables (which ignore case
    /// and treat `-` as `_`), so that no two domains share a variable or, on a
    /// case-insensitive file system, a state database.
    mutating func checkNames(_ drafts: [DomainDraft]) {
        var firstByVariable: [String: DomainDraft] = [:]
        for draft in drafts {
            guard let name = draft.name else { continue }
            let variable = DomainConfiguration.passwordVariable(forDomain: name)
            guard let first = firstByVariable[variable], let firstName = first.name else {
                firstByVariable[variable] = draft
                continue
            }
            let namePath = ["domain", "[\(draft.index)]", "name"]
            let firstLine = sourceMap.value(["domain", "[\(first.index)]", "name"]).map { " at line \($0.line)" } ?? ""
            let quoted = { (text: String) in DiagnosticWording.quoted(text) }
            if firstName == name {
                error(
                    "\(draft.label): the name \(quoted(name)) is already used by the domain\(firstLine); give each "
                        + "domain its own name.",
                    at: sourceMap.value(namePath)
                )
            } else {
                error(
                    "\(draft.label): the name \(quoted(name)) is too close to \(quoted(firstName)) (the domain\(firstLine)): "
                        + "both would use the password variable \(variable); rename one of them.",
                    at: sourceMap.value(namePath)
                )
            }
        }
    }

    /// A local folder must not be, contain or be inside another domain's local
    /// folder, its own `file:` remote, or the state directory. Each pair is
    /// reported once, at the later domain's `local`.
    mutating func checkFolders(_ drafts: [DomainDraft], stateDirectory: String) {
        for (offset, draft) in drafts.enumerated() {
            guard let local = draft.localPath else { continue }
            for earlier in drafts[..<offset] {
                guard let other = earlier.localPath, let relation = Self.relation(local, other) else { continue }
                localError(draft, relation.phrase(otherPath: other, otherLabel: earlier.label))
            }
            if let remote = draft.remoteDirectory, Self.relation(local, remote) != nil {
                localError(
                    draft,
                    "and its file: remote \(DiagnosticWording.quoted(remote)) overlap; the remote directory must be "
                        + "outside the local folder, and the local folder outside the remote directory."
                )
            }
            if PathSyntax.isWithin(stateDirectory, local) {
                localError(
                    draft,
                    "contains the state directory \(DiagnosticWording.quoted(stateDirectory)); choose a folder that "
                        + "does not contain it, or set state_dir to a directory outside it."
                )
            }
        }
    }

    private mutating func localError(_ draft: DomainDraft, _ predicate: String) {
        let local = DiagnosticWording.quoted(draft.localPath ?? "")
        error("\(draft.label): local \(local) \(predicate)", at: sourceMap.value(["domain", "[\(draft.index)]", "local"]))
    }

    /// How two standardised absolute paths overlap, comparing whole components.
    enum Overlap {
        case same, inside, contains

        func phrase(otherPath: String, otherLabel: String) -> String {
            let other = DiagnosticWording.quoted(otherPath)
            switch self {
            case .same:
                return "is the same folder as the local folder of \(otherLabel); give each domain its own folder."
            case .inside:
                return "is inside the local folder of \(otherLabel) (\(other)); sync folders must not overlap: choose "
                    + "a folder outside it."
            case .contains:
                return "contains the local folder of \(otherLabel) (\(other)); sync folders must not overlap: choose "
                    + "a folder that does not contain it."
            }
        }
    }

    static func relation(_ path: String, _ other: String) -> Overlap? {
        let inside = PathSyntax.isWithin(path, other)
        let contains = PathSyntax.isWithin(other, path)
        switch (inside, contains) {
        case (true, true): return .same
        case (true, false): return .inside
        case (false, true): return .contains
        case (false, false): return nil
        }
    }
}

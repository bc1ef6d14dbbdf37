import TOMLKit

/// Typed readers. Each returns `nil` when the key is absent or its value is
/// wrong, and records an error in the second case, pointing at the value.
extension ConfigValidator {
    mutating func typeError(_ key: String, _ value: TOMLValueConvertible, in scope: KeyScope, expected: String) {
        error(
            "\(scope.subject)\(scope.name(key)) must be \(expected), found \(DiagnosticWording.found(value)).",
            at: sourceMap.value(scope.path(key))
        )
    }

    /// Records an error about the value of `key`, prefixed with the scope's label.
    mutating func valueError(_ message: String, key: String, in scope: KeyScope) {
        error(scope.subject + message, at: sourceMap.value(scope.path(key)))
    }

    /// `key = "text"` as written, for messages.
    func written(_ key: String, _ text: String, in scope: KeyScope) -> String {
        "\(scope.name(key)) = \(DiagnosticWording.quoted(text))"
    }

    mutating func string(_ table: TOMLTable, _ key: String, in scope: KeyScope) -> String? {
        guard let value = table[key] else { return nil }
        guard let text = value.string else {
            typeError(key, value, in: scope, expected: "a string")
            return nil
        }
        return text
    }

    /// Like ``string(_:_:in:)``, and reports a missing key at its table's header.
    mutating func requiredString(_ table: TOMLTable, _ key: String, in scope: KeyScope, example: String) -> String? {
        guard table.contains(key: key) else {
            error("\(scope.subject)missing required key \"\(key)\"; add e.g. \(example).", at: sourceMap.key(scope.path))
            return nil
        }
        return string(table, key, in: scope)
    }

    mutating func bool(_ table: TOMLTable, _ key: String, in scope: KeyScope) -> Bool? {
        guard let value = table[key] else { return nil }
        guard let flag = value.bool else {
            typeError(key, value, in: scope, expected: "true or false")
            return nil
        }
        return flag
    }

    mutating func integer(
        _ table: TOMLTable, _ key: String, in scope: KeyScope, range: ClosedRange<Int>, expected: String
    ) -> Int? {
        guard let value = table[key] else { return nil }
        guard let number = value.int else {
            typeError(key, value, in: scope, expected: expected)
            return nil
        }
        guard range.contains(number) else {
            valueError("\(scope.name(key)) must be \(expected), found \(number).", key: key, in: scope)
            return nil
        }
        return number
    }

    /// An array of strings; `example` shows the right form, e.g. `exclude = ["*.tmp"]`.
    mutating func strings(_ table: TOMLTable, _ key: String, in scope: KeyScope, example: String) -> [String]? {
        guard let value = table[key] else { return nil }
        guard let array = value.array else {
            typeError(key, value, in: scope, expected: "an array of strings, e.g. \(example)")
            return nil
        }
        var result: [String] = []
        for (index, element) in array.enumerated() {
            if let text = element.string {
                result.append(text)
            } else {
                error(
                    "\(scope.subject)\(scope.name(key))[\(index)] must be a string, found \(DiagnosticWording.found(element)).",
                    at: sourceMap.value(scope.path(key) + ["[\(index)]"])
                )
            }
        }
        return result.count == array.count ? result : nil
    }

    /// A duration string such as `"30s"` or `"1h30m"`, longer than zero.
    mutating func duration(_ table: TOMLTable, _ key: String, in scope: KeyScope) -> Duration? {
        guard let value = table[key] else { return nil }
        guard let text = value.string else {
            if let number = value.int {
                valueError(
                    "\(scope.name(key)) = \(number) has no unit; write a string with a unit, "
                        + "e.g. \(scope.name(key)) = \"\(number)s\".",
                    key: key, in: scope
                )
            } else {
                typeError(key, value, in: scope, expected: "a duration such as \"30s\", \"5m\" or \"1h\"")
            }
            return nil
        }
        guard let duration = DurationSyntax.parse(text) else {
            valueError(
                "\(written(key, text, in: scope)) is not a duration; write a number and a unit, e.g. \"30s\", \"5m\", \"1h\".",
                key: key, in: scope
            )
            return nil
        }
        guard duration > .zero else {
            valueError("\(written(key, text, in: scope)) must be longer than zero.", key: key, in: scope)
            return nil
        }
        return duration
    }

    /// A size: a string such as `"16MiB"`, or a whole number of bytes.
    /// Also returns the value as written, for further messages.
    mutating func size(_ table: TOMLTable, _ key: String, in scope: KeyScope) -> (ByteCount, written: String)? {
        guard let value = table[key] else { return nil }
        if let number = value.int {
            guard number >= 0 else {
                valueError("\(scope.name(key)) = \(number) is negative; a size is 0 or more.", key: key, in: scope)
                return nil
            }
            return (ByteCount(Int64(number)), "\(scope.name(key)) = \(number)")
        }
        guard let text = value.string else {
            typeError(key, value, in: scope, expected: "a size such as \"16MiB\" or a whole number of bytes")
            return nil
        }
        guard let size = ByteCount(parsing: text) else {
            valueError(
                "\(written(key, text, in: scope)) is not a size; write a number and a unit, "
                    + "e.g. \"4KiB\", \"16MiB\", \"1GiB\", or a number of bytes.",
                key: key, in: scope
            )
            return nil
        }
        return (size, written(key, text, in: scope))
    }

    /// A path: absolute, `~`-prefixed, or relative to the configuration file's
    /// directory; returned absolute and standardised.
    mutating func path(_ table: TOMLTable, _ key: String, in scope: KeyScope) -> String? {
        guard let text = string(table, key, in: scope) else { return nil }
        switch ResolvedPath(text, home: directories.home, directory: baseDirectory) {
        case .absolute(let path):
            return path
        case .empty:
            valueError(
                "\(scope.name(key)) is empty; write an absolute path, a path starting with ~/, "
                    + "or a path relative to the directory of this file.",
                key: key, in: scope
            )
        case .otherUsersHome:
            valueError(
                "\(written(key, text, in: scope)) starts with ~user, which tidesync does not expand; "
                    + "write the full path.",
                key: key, in: scope
            )
        }
        return nil
    }
}

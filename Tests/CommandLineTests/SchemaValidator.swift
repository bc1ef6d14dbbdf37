import Foundation

/// Checks a JSON value against the subset of JSON Schema that packaging/schema/status.schema.json uses:
/// type, required, properties, items, enum, $ref to #/$defs, format date-time. Returns the
/// problems found, each with its JSON path; empty when the value conforms.
struct SchemaValidator {
    let root: [String: Any]

    init(schemaFile: String) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: schemaFile))
        root = try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }

    func problems(_ value: Any, schema: [String: Any]? = nil, at path: String = "$") -> [String] {
        var schema = schema ?? root
        if let reference = schema["$ref"] as? String, reference.hasPrefix("#/$defs/") {
            let name = String(reference.dropFirst("#/$defs/".count))
            guard let target = (root["$defs"] as? [String: Any])?[name] as? [String: Any] else { return ["\(path): unknown $ref \(reference)"] }
            schema = target
        }
        var found: [String] = []
        if let type = schema["type"] as? String, !Self.matches(value, type: type) {
            return ["\(path): expected \(type), found \(value)"]
        }
        if let allowed = schema["enum"] as? [Any], !allowed.contains(where: { "\($0)" == "\(value)" }) {
            found.append("\(path): \(value) is not one of \(allowed)")
        }
        if schema["format"] as? String == "date-time", let text = value as? String, ISO8601DateFormatter().date(from: text) == nil {
            found.append("\(path): \(text) is not an ISO 8601 date-time")
        }
        if let object = value as? [String: Any] {
            for key in schema["required"] as? [String] ?? [] where object[key] == nil {
                found.append("\(path): missing required \"\(key)\"")
            }
            let properties = schema["properties"] as? [String: Any] ?? [:]
            for (key, member) in object {
                guard let memberSchema = properties[key] as? [String: Any] else {
                    found.append("\(path).\(key): not in the documented schema")
                    continue
                }
                found += problems(member, schema: memberSchema, at: "\(path).\(key)")
            }
        }
        if let array = value as? [Any], let items = schema["items"] as? [String: Any] {
            for (index, element) in array.enumerated() { found += problems(element, schema: items, at: "\(path)[\(index)]") }
        }
        return found
    }

    /// `schemaFile`'s $defs entry `name` as a schema (for the conflict list).
    func definition(_ name: String) -> [String: Any] { ["$ref": "#/$defs/\(name)"] }

    /// JSONSerialization on Linux hands booleans back as `__NSCFBoolean`, which also casts to
    /// `Int`; numbers as `NSNumber`.
    static func isBoolean(_ value: Any) -> Bool {
        type(of: value) == Bool.self || String(describing: type(of: value)).contains("Boolean")
    }

    static func matches(_ value: Any, type: String) -> Bool {
        switch type {
        case "object": return value is [String: Any]
        case "array": return value is [Any]
        case "string": return value is String
        case "boolean": return isBoolean(value)
        case "integer": return !isBoolean(value) && (value is Int || (value as? Double).map { $0.rounded() == $0 } == true)
        case "number": return !isBoolean(value) && (value is Int || value is Double)
        default: return false
        }
    }
}

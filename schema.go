package agentpty

import (
	"encoding/json"
	"reflect"
	"strings"
)

// outputSchema returns the JSON Schema of a result type as encoding/json
// writes it: an object with a property for each JSON field and the fields
// without omitempty required. Made from the type, it cannot fall behind a
// result field added later. Other properties are allowed, so a host that
// validates against an older schema still accepts newer results.
func outputSchema(result any) json.RawMessage {
	b, err := json.Marshal(typeSchema(reflect.TypeOf(result)))
	if err != nil {
		panic(err) // maps of strings and bools always marshal
	}
	return b
}

func typeSchema(t reflect.Type) map[string]any {
	switch t.Kind() {
	case reflect.Pointer:
		return typeSchema(t.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": typeSchema(t.Elem())}
	case reflect.Struct:
		props := map[string]any{}
		var required []string
		structFields(t, props, &required)
		s := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			s["required"] = required
		}
		return s
	case reflect.Map:
		return map[string]any{"type": "object"}
	}
	return map[string]any{}
}

// structFields adds t's JSON fields to props, embedded structs' fields
// included, and the names of those always written to required.
func structFields(t reflect.Type, props map[string]any, required *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			structFields(f.Type, props, required)
			continue
		}
		if name == "" {
			name = f.Name
		}
		s := typeSchema(f.Type)
		omit := strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
		switch k := f.Type.Kind(); {
		case omit:
		case k == reflect.Pointer || k == reflect.Slice || k == reflect.Map:
			// Written as null when nil.
			s["type"] = []any{s["type"], "null"}
			*required = append(*required, name)
		default:
			*required = append(*required, name)
		}
		props[name] = s
	}
}

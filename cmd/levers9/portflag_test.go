package main

import (
	"reflect"
	"testing"
)

func TestPortFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args    []string
		want    portFlags
		wantErr bool
	}{
		{args: []string{"http=8888"}, want: portFlags{{"name": "http", "port": 8888}}},
		{args: []string{"http", "ssh=22"}, want: portFlags{{"name": "http", "port": 0}, {"name": "ssh", "port": 22}}},
		{args: []string{"=80"}, wantErr: true},
		{args: []string{"http=eighty"}, wantErr: true},
		{args: []string{""}, wantErr: true},
	}
	for _, tc := range tests {
		var p portFlags
		var err error
		for _, a := range tc.args {
			if err = p.Set(a); err != nil {
				break
			}
		}
		if (err != nil) != tc.wantErr {
			t.Errorf("%q: err = %v, want error %v", tc.args, err, tc.wantErr)
			continue
		}
		if !tc.wantErr && !reflect.DeepEqual(p, tc.want) {
			t.Errorf("%q = %v, want %v", tc.args, p, tc.want)
		}
	}
}
